// parse_key and parse_op_key: the canonical gemm line, the `linear` shorthand and the row-operator
// lines. No regex, no streams, no copies of the line: one pass over string_views. A failure unwinds
// with ParseFailure, caught once at the entry point and returned as a value.
#include <array>
#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "key/gemm_key.hpp"
#include "key/gemm_rules.hpp"
#include "key/key_names.hpp"
#include "key/line_rules.hpp"
#include "key/key_tokenizer.hpp"
#include "key/row_key.hpp"

namespace kd {
namespace {

using key_tokens::Token;
using key_tokens::Tokenizer;

struct ParseFailure {
  KeyError error;
};

[[noreturn]] void fail(const Token& t, std::string_view reason) {
  throw ParseFailure{key_tokens::token_error(t, reason)};
}
[[noreturn]] void fail_at(std::size_t column, std::string_view message) {
  throw ParseFailure{key_tokens::error_at(column, message)};
}

// The canonical order of each op's tokens, optional ones included: it drives the diagnosis of a
// token found where another was expected (duplicate, out of order, unknown).
constexpr std::array<std::string_view, 22> kGemmOrder{
    "a",   "b",   "c",     "compute",  "ta",       "tb",       "m",        "n",
    "k",   "lda", "ldb",   "ldc",      "batch",    "stride_a", "stride_b", "stride_c",
    "epilogue", "beta0", "precision", "arch", "gpu", "sms"};
constexpr std::array<std::string_view, 6> kLinearOrder{"dtype", "tokens", "in",
                                                       "out",   "bias",   "batch"};
// Each row op's tokens, holding only the inputs it carries: a `weight=` or `bias=` the op does not
// carry, found elsewhere than where it is refused by name, reads as a token the op does not know,
// never as one out of order.
constexpr std::array<std::string_view, 7> kRmsnormOrder{"dtype", "rows", "cols", "weight",
                                                        "arch",  "gpu",  "sms"};
constexpr std::array<std::string_view, 8> kLayernormOrder{"dtype", "rows", "cols", "weight",
                                                          "bias",  "arch", "gpu",  "sms"};
constexpr std::array<std::string_view, 6> kSoftmaxOrder{"dtype", "rows", "cols", "arch", "gpu", "sms"};
constexpr std::size_t kNotInOrder = std::numeric_limits<std::size_t>::max();

// Takes the tokens of one op in its canonical order.
class OrderedTokens {
public:
  OrderedTokens(Tokenizer& tokens, std::span<const std::string_view> order)
      : tokens_(tokens), order_(order) {}

  // The next token, which must be `name=`.
  Token take(std::string_view name) {
    const Token* t = peek();
    if (t == nullptr) {
      fail_at(tokens_.end_column(), "expected token '" + key(name) + "' but the line ends");
    }
    if (!t->has_equals || t->name != name) misplaced(*t, name);
    const Token taken = *t;
    consume(taken);
    return taken;
  }

  // The next token when it is `name=`; nothing consumed otherwise.
  std::optional<Token> take_optional(std::string_view name) {
    const Token* t = peek();
    if (t == nullptr || !t->has_equals || t->name != name) return std::nullopt;
    const Token taken = *t;
    consume(taken);
    return taken;
  }

  // Fails with `reason` when the next token is one of `names`.
  void reject_next(std::span<const std::string_view> names, std::string_view reason) {
    const Token* t = peek();
    if (t == nullptr || !t->has_equals) return;
    for (const auto name : names) {
      if (t->name == name) fail(*t, reason);
    }
  }

  void expect_end() {
    if (const Token* t = peek()) misplaced(*t, {});
  }

private:
  static std::string key(std::string_view name) { return std::string(name) + "="; }

  // The next token (nullptr at the end of the line); valid until the next consume().
  const Token* peek() {
    const Tokenizer::Next& next = tokens_.peek();
    if (const auto* e = std::get_if<KeyError>(&next)) throw ParseFailure{*e};
    return std::get_if<Token>(&next);
  }

  void consume(const Token& t) {
    const std::size_t i = index_of(t.name);
    seen_ |= std::uint32_t{1} << i;
    next_ = i + 1;
    tokens_.advance();
  }

  // Tokens come in order, so the search starts where the last one was found.
  std::size_t index_of(std::string_view name) const {
    for (std::size_t i = next_; i < order_.size(); ++i) {
      if (order_[i] == name) return i;
    }
    for (std::size_t i = 0; i < next_ && i < order_.size(); ++i) {
      if (order_[i] == name) return i;
    }
    return kNotInOrder;
  }

  // `got` stands where `expected` (empty: the end of the line) should be.
  [[noreturn]] void misplaced(const Token& got, std::string_view expected) {
    const std::string text(got.text);
    const std::size_t got_index = got.has_equals ? index_of(got.name) : kNotInOrder;
    if (got_index == kNotInOrder) {
      if (expected.empty()) fail_at(got.column, "unexpected trailing text '" + text + "'");
      fail_at(got.column, "expected '" + key(expected) + "' got '" + text + "'");
    }
    if ((seen_ >> got_index) & 1u) fail(got, "duplicate token '" + key(got.name) + "'");
    const std::size_t expected_index = expected.empty() ? order_.size() : index_of(expected);
    if (got_index > expected_index) {
      fail_at(got.column, "expected '" + key(expected) + "' got '" + text + "'");
    }
    const std::string before = got_index == 0 ? "the op" : "'" + key(order_[got_index - 1]) + "'";
    fail(got, "out of order: '" + key(got.name) + "' goes right after " + before);
  }

  Tokenizer& tokens_;
  std::span<const std::string_view> order_;
  std::uint32_t seen_ = 0;  // bit i: order_[i] consumed
  std::size_t next_ = 0;    // index after the last consumed token
};
static_assert(kGemmOrder.size() <= 32, "seen_ holds one bit per token");

template <class E, std::size_t N>
E enum_value(const Token& t, const std::array<key_names::Named<E>, N>& table) {
  if (const auto v = key_names::value_of(table, t.value)) return *v;
  fail(t, "expected " + key_names::alternatives(table));
}

// A decimal integer in [minimum, maximum]: digits only, no sign, no leading zero (a line has one
// spelling per key). `text` is the token's value or a part of it (a range's end).
std::int64_t integer_text(const Token& t, std::string_view v, std::int64_t minimum,
                          std::int64_t maximum = std::numeric_limits<std::int64_t>::max()) {
  if (!v.empty() && v.front() == '-') fail(t, "negative values are not allowed");
  for (const char ch : v) {
    if (!line_rules::is_digit(ch)) fail(t, "expected a decimal integer");
  }
  if (v.empty()) fail(t, "expected a decimal integer");
  if (v.size() > 1 && v.front() == '0') fail(t, "leading zeros are not allowed");
  std::uint64_t u = 0;
  const auto res = std::from_chars(v.data(), v.data() + v.size(), u);
  if (res.ec != std::errc{} || u > static_cast<std::uint64_t>(maximum)) {
    fail(t, "value too large (at most " + std::to_string(maximum) + ")");
  }
  const auto value = static_cast<std::int64_t>(u);
  if (value < minimum) fail(t, "must be >= " + std::to_string(minimum));
  return value;
}

std::int64_t integer_value(const Token& t, std::int64_t minimum,
                           std::int64_t maximum = std::numeric_limits<std::int64_t>::max()) {
  return integer_text(t, t.value, minimum, maximum);
}

// A token count: `N`, or the range `LO..HI` (1 <= LO < HI) a key may stand for (issue 29).
struct CountRange {
  std::int64_t lo = 0;
  std::int64_t hi = 0;  // 0: exact
};
CountRange count_or_range(const Token& t) {
  constexpr std::string_view kDots = "..";
  const std::size_t dots = t.value.find(kDots);
  if (dots == std::string_view::npos) return {integer_value(t, 1), 0};
  const std::string_view lo_text = t.value.substr(0, dots), hi_text = t.value.substr(dots + kDots.size());
  const std::string name(t.name);
  if (lo_text.empty() || hi_text.empty()) {
    fail(t, "a range needs both ends: write " + name + "=LO..HI, e.g. " + name + "=33..64");
  }
  const std::int64_t lo = integer_text(t, lo_text, 1), hi = integer_text(t, hi_text, 1);
  if (lo > hi) {
    fail(t, "the range is inverted (" + std::to_string(lo) + " > " + std::to_string(hi) + "): write " + name +
                "=" + std::to_string(hi) + ".." + std::to_string(lo));
  }
  if (lo == hi) fail(t, "a range of one value: write " + name + "=" + std::to_string(lo));
  return {lo, hi};
}

bool flag_value(const Token& t) {
  if (t.value == "0") return false;
  if (t.value == "1") return true;
  fail(t, "expected 0 or 1");
}

// Leading dimensions: at least the rows of the stored matrix (cuBLAS's rule).
std::int64_t ld_value(const Token& t, std::int64_t minimum, std::string_view why) {
  const std::int64_t ld = integer_value(t, 1);
  if (ld < minimum) {
    fail(t, std::string(t.name) + " must be >= " + std::to_string(minimum) + " (" +
                std::string(why) + ")");
  }
  return ld;
}

void parse_types(OrderedTokens& p, GemmKey& k) {
  k.a = enum_value(p.take("a"), key_names::kDType);
  const Token b = p.take("b");
  k.b = enum_value(b, key_names::kDType);
  if (k.b != k.a) fail(b, "b must equal a (a=" + std::string(to_string(k.a)) + ")");
  const Token c = p.take("c");
  k.c = enum_value(c, key_names::kDType);
  if (!c_type_allowed(k.a, k.c)) {
    fail(c, "c must be the input type, or f32 with f16/bf16 inputs");
  }
  const Token compute = p.take("compute");
  k.compute = enum_value(compute, key_names::kComputeType);
  if (!compute_allowed(k.a, k.c, k.compute)) {
    fail(compute, "compute=f16 needs a=b=c=f16");
  }
  k.precision = default_precision(k.compute);
}

void parse_shape(OrderedTokens& p, GemmKey& k) {
  k.ta = enum_value(p.take("ta"), key_names::kTranspose);
  k.tb = enum_value(p.take("tb"), key_names::kTranspose);
  k.m = integer_value(p.take("m"), 1);
  const CountRange n = count_or_range(p.take("n"));
  k.n = n.lo;
  k.n_hi = n.hi;
  k.k = integer_value(p.take("k"), 1);
  const bool a_plain = k.ta == Transpose::N, b_plain = k.tb == Transpose::N;
  k.lda = ld_value(p.take("lda"), min_lda(k),
                   a_plain ? "rows of stored A: ta=N -> m" : "rows of stored A: ta=T -> k");
  // A range's leading dimensions must hold for its largest n.
  k.ldb = ld_value(p.take("ldb"), min_ldb(k.at_n(k.n_last())),
                   b_plain ? "rows of stored B: tb=N -> k"
                           : (k.is_range() ? "rows of stored B: tb=T -> the range's largest n"
                                           : "rows of stored B: tb=T -> n"));
  k.ldc = ld_value(p.take("ldc"), k.m, "rows of C: m");
  k.batch = integer_value(p.take("batch"), 1);
  if (k.batch > 1) {
    k.stride_a = integer_value(p.take("stride_a"), 0);
    k.stride_b = integer_value(p.take("stride_b"), 0);
    k.stride_c = integer_value(p.take("stride_c"), 0);
  } else {
    static constexpr std::array<std::string_view, 3> kStrides{"stride_a", "stride_b", "stride_c"};
    p.reject_next(kStrides, "strides are only allowed when batch > 1");
  }
  k.epilogue = enum_value(p.take("epilogue"), key_names::kEpilogue);
  k.beta_zero = flag_value(p.take("beta0"));
}

void parse_precision(OrderedTokens& p, GemmKey& k) {
  const std::optional<Token> t = p.take_optional("precision");
  if (!t) return;
  const PrecisionClass precision = enum_value(*t, key_names::kPrecision);
  if (!precision_allowed(k.compute, precision)) {
    fail(*t, "not a precision class of compute=" + std::string(to_string(k.compute)) +
                 " (f32 allows f32 or tf32, f16 allows f16)");
  }
  k.precision = precision;
}

// The device part every op's full key ends with; nullopt when the line ends before it.
std::optional<DevicePart> parse_device(OrderedTokens& p) {
  const std::optional<Token> arch = p.take_optional("arch");
  if (!arch) return std::nullopt;
  DevicePart d;
  if (const auto why = line_rules::arch_problem(arch->value)) fail(*arch, *why);
  d.arch = std::string(arch->value);
  const Token gpu = p.take("gpu");
  const std::string_view quoted = gpu.value;
  if (quoted.size() < 2 || quoted.front() != '"' || quoted.back() != '"') {
    fail(gpu, "expected a double-quoted GPU name");
  }
  const std::string_view name = quoted.substr(1, quoted.size() - 2);
  if (const auto why = line_rules::gpu_name_problem(name)) fail(gpu, *why);
  d.gpu = std::string(name);
  d.sms = static_cast<int>(integer_value(p.take("sms"), 1, std::numeric_limits<int>::max()));
  return d;
}

GemmKey parse_gemm(Tokenizer& tokens) {
  OrderedTokens p(tokens, kGemmOrder);
  GemmKey k;
  parse_types(p, k);
  parse_shape(p, k);
  parse_precision(p, k);
  k.device = parse_device(p);
  p.expect_end();
  return k;
}

// `linear dtype= tokens= in= out= [bias=0|1] [batch=1]`: what torch.nn.Linear issues through
// cuBLAS. y[tokens,out] = x[tokens,in] W^T, row-major, is column-major C[out,tokens] =
// W^T-as-stored(T) x(N): ta=T tb=N m=out n=tokens k=in.
GemmKey parse_linear(Tokenizer& tokens) {
  OrderedTokens p(tokens, kLinearOrder);
  GemmKey k;
  const DType dtype = enum_value(p.take("dtype"), key_names::kDType);
  k.a = k.b = k.c = dtype;
  k.compute = ComputeType::f32;
  k.precision = default_precision(k.compute);
  k.ta = Transpose::T;
  k.tb = Transpose::N;
  const CountRange count = count_or_range(p.take("tokens"));
  k.n = count.lo;
  k.n_hi = count.hi;
  k.k = integer_value(p.take("in"), 1);
  k.m = integer_value(p.take("out"), 1);
  k.lda = k.ldb = k.k;
  k.ldc = k.m;
  k.batch = 1;
  if (const auto bias = p.take_optional("bias")) {
    k.epilogue = flag_value(*bias) ? Epilogue::bias : Epilogue::none;
  }
  if (const auto batch = p.take_optional("batch")) {
    if (integer_value(*batch, 1) != 1) {
      fail(*batch,
           "the linear shorthand takes only batch=1 (nn.Linear folds leading dims into tokens)");
    }
  }
  k.beta_zero = true;
  p.expect_end();
  return k;
}

// Indexed by RowOp (op words come from key_names::kRowOp, so always in range).
constexpr std::array<std::span<const std::string_view>, 3> kRowOrders{kRmsnormOrder, kLayernormOrder,
                                                                     kSoftmaxOrder};
static_assert(kRowOrders.size() == key_names::kRowOp.size());

// rows * cols * dtype_bytes within kMaxRowTensorBytes, checked at the token that completes it.
void check_tensor_size(const Token& cols, const RowKey& k) {
  std::int64_t elements = 0;
  if (!__builtin_mul_overflow(k.rows, k.cols, &elements) &&
      elements <= kMaxRowTensorBytes / static_cast<std::int64_t>(dtype_bytes(k.dtype))) {
    return;
  }
  fail(cols, "rows*cols of " + std::string(to_string(k.dtype)) +
                 " is more than 2^40 bytes (one tensor is at most 1 TiB)");
}

// `weight=` and `bias=` as the op carries them; one it does not carry is refused by name where it
// would stand, before or after the other.
void parse_row_inputs(OrderedTokens& p, RowKey& k) {
  static constexpr std::array<std::string_view, 2> kWeightAndBias{"weight", "bias"};
  static constexpr std::array<std::string_view, 1> kBias{"bias"};
  const std::string op(to_string(k.op));
  if (!takes_weight(k.op)) {
    p.reject_next(kWeightAndBias, op + " takes no weight or bias");
    return;
  }
  const std::string no_bias = op + " takes no bias (only weight=)";
  if (!takes_bias(k.op)) p.reject_next(kBias, no_bias);
  k.weight = flag_value(p.take("weight"));
  if (!takes_bias(k.op)) {
    p.reject_next(kBias, no_bias);
    return;
  }
  k.bias = flag_value(p.take("bias"));
}

RowKey parse_row(Tokenizer& tokens, RowOp op) {
  OrderedTokens p(tokens, kRowOrders[static_cast<std::size_t>(op)]);
  RowKey k;
  k.op = op;
  k.dtype = enum_value(p.take("dtype"), key_names::kDType);
  k.rows = integer_value(p.take("rows"), 1);
  const Token cols = p.take("cols");
  k.cols = integer_value(cols, 1);
  check_tensor_size(cols, k);
  parse_row_inputs(p, k);
  k.device = parse_device(p);
  p.expect_end();
  return k;
}

// The ops whose lines are GEMM keys; the row ops are key_names::kRowOp.
struct GemmOp {
  std::string_view word;
  GemmKey (*parse)(Tokenizer&);
};
constexpr std::array<GemmOp, 2> kGemmOps{{{"gemm", &parse_gemm}, {"linear", &parse_linear}}};

const GemmOp* gemm_op(std::string_view word) {
  for (const GemmOp& op : kGemmOps) {
    if (op.word == word) return &op;
  }
  return nullptr;
}

// Which op words a parser accepts: parse_key only the GEMM ones.
enum class Ops { gemm, all };

// "unknown op (expected gemm or linear)", or with the row ops too.
std::string unknown_op(Ops accepted) {
  std::vector<std::string_view> words;
  for (const GemmOp& op : kGemmOps) words.push_back(op.word);
  if (accepted == Ops::all) {
    for (const auto& row : key_names::kRowOp) words.push_back(row.name);
  }
  std::string out = "unknown op (expected ";
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += (i + 1 == words.size()) ? " or " : ", ";
    out += words[i];
  }
  out += ')';
  return out;
}

// The op word, consumed.
Token take_op(Tokenizer& tokens) {
  const Tokenizer::Next& first = tokens.peek();
  if (const auto* e = std::get_if<KeyError>(&first)) throw ParseFailure{*e};
  const Token* op = std::get_if<Token>(&first);
  if (op == nullptr) fail_at(1, "empty line");
  if (op->text.front() == '#') fail_at(op->column, "comment line");
  const Token taken = *op;
  tokens.advance();
  return taken;
}

GemmKey parse_gemm_line(std::string_view line) {
  Tokenizer tokens(line);
  const Token op = take_op(tokens);
  if (const GemmOp* g = gemm_op(op.text)) return g->parse(tokens);
  if (key_names::value_of(key_names::kRowOp, op.text)) {
    fail(op, "a row-operator key where a GEMM key is expected");
  }
  fail(op, unknown_op(Ops::gemm));
}

OpKey parse_op_line(std::string_view line) {
  Tokenizer tokens(line);
  const Token op = take_op(tokens);
  if (const GemmOp* g = gemm_op(op.text)) return g->parse(tokens);
  if (const auto row = key_names::value_of(key_names::kRowOp, op.text)) return parse_row(tokens, *row);
  fail(op, unknown_op(Ops::all));
}

// The length limit first, then `parse`; a failure returned as a value.
template <class Key>
std::variant<Key, KeyError> parse_guarded(std::string_view line, Key (*parse)(std::string_view)) {
  if (line.size() > kMaxKeyLineBytes) {
    return key_tokens::error_at(kMaxKeyLineBytes + 1,
                                "the line is " + std::to_string(line.size()) + " bytes, longer than the " +
                                    std::to_string(kMaxKeyLineBytes) + "-byte limit of a key line");
  }
  try {
    return parse(line);
  } catch (ParseFailure& f) {
    return std::move(f.error);
  }
}

}  // namespace

std::variant<GemmKey, KeyError> parse_key(std::string_view line) {
  return parse_guarded(line, &parse_gemm_line);
}

std::variant<OpKey, KeyError> parse_op_key(std::string_view line) {
  return parse_guarded(line, &parse_op_line);
}

}  // namespace kd
