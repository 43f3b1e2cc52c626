#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "common/error.hpp"
#include "worker/frame.hpp"

namespace kd::worker {
namespace {

struct SocketPair {
  int fd[2] = {-1, -1};
  SocketPair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fd), 0); }
  ~SocketPair() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
};

TEST(WorkerFrame, RoundTripKeepsHeaderAndBinaryBlob) {
  Frame f;
  f.header = {{"type", "evaluate"}, {"id", 7}, {"key", "gemm a=f32"}};
  f.blob = std::string("\x7f" "ELF\0\0\x01\xff", 8);
  const std::string bytes = encode_frame(f);
  ASSERT_EQ(bytes.size(), 12 + f.header.dump().size() + 8);
  const Frame back = decode_frame(bytes);
  EXPECT_EQ(back.header, f.header);
  EXPECT_EQ(back.blob, f.blob);
}

TEST(WorkerFrame, MalformedFramesThrowDataErrors) {
  Frame f{{{"type", "x"}}, "blob"};
  const std::string good = encode_frame(f);
  EXPECT_THROW(decode_frame(good.substr(0, 5)), Error);               // truncated prefix
  EXPECT_THROW(decode_frame(good.substr(0, good.size() - 1)), Error); // truncated blob
  std::string zero_header = good;
  zero_header[0] = zero_header[1] = zero_header[2] = zero_header[3] = 0;
  EXPECT_THROW(decode_frame(zero_header), Error);
  std::string not_json = good;
  not_json[12] = '#';
  EXPECT_THROW(decode_frame(not_json), Error);
  std::string huge_blob = good;
  huge_blob[11] = '\x7f';  // blob length beyond the limit
  EXPECT_THROW(decode_frame(huge_blob), Error);
}

TEST(WorkerFrame, ReadsFramesOverASocketThenEof) {
  SocketPair sp;
  const Frame a{{{"type", "a"}}, std::string(300000, 'x')};  // larger than a socket buffer
  const Frame b{{{"type", "b"}, {"n", 2}}, ""};
  std::thread writer([&] {
    write_frame(sp.fd[1], a);
    write_frame(sp.fd[1], b);
    ::shutdown(sp.fd[1], SHUT_WR);
  });
  Frame got;
  ASSERT_EQ(read_frame(sp.fd[0], got, std::chrono::steady_clock::now() + std::chrono::seconds(10)), ReadStatus::ok);
  EXPECT_EQ(got.header["type"], "a");
  EXPECT_EQ(got.blob.size(), 300000u);
  ASSERT_EQ(read_frame(sp.fd[0], got), ReadStatus::ok);
  EXPECT_EQ(got.header["n"], 2);
  EXPECT_EQ(read_frame(sp.fd[0], got), ReadStatus::eof);
  writer.join();
}

TEST(WorkerFrame, ReadTimesOutWhenNothingArrives) {
  SocketPair sp;
  Frame got;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(read_frame(sp.fd[0], got, t0 + std::chrono::milliseconds(150)), ReadStatus::timeout);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(150));
}

TEST(WorkerFrame, WritingToAClosedPeerThrowsInsteadOfSigpipe) {
  SocketPair sp;
  ::close(sp.fd[0]);
  sp.fd[0] = -1;
  EXPECT_THROW(write_frame(sp.fd[1], Frame{{{"type", "x"}}, ""}), Error);
}

}  // namespace
}  // namespace kd::worker
