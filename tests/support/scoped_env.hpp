// An environment variable set (or unset) for one scope, as it was restored when the object dies.
#pragma once

#include <optional>
#include <string>

namespace kd::test {

class ScopedEnv {
public:
  // `value` nullptr unsets `name`. `name` must outlive the object (a string literal).
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace kd::test
