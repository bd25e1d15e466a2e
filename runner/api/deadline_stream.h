// A connection (connection.h) as a synchronous Beast stream under a deadline, for
// http_server.cc: every read and write waits at most until the deadline set before it.
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <chrono>

#include "runner/api/connection.h"

namespace sandrun::api {

// A connection (plain or TLS) under a deadline: Beast's synchronous algorithms read and write
// through it, and a peer that stalls past the deadline gets boost::beast::error::timeout instead of
// holding the thread. (Asio's own blocking socket waits without limit, whatever SO_RCVTIMEO
// says.)
class DeadlineStream {
 public:
  using Clock = std::chrono::steady_clock;
  using BoostError = boost::system::error_code;

  explicit DeadlineStream(Connection& conn) : conn_(conn) {}

  void ExpiresAt(Clock::time_point deadline) { deadline_ = deadline; }
  void ExpiresAfter(std::chrono::milliseconds d) { deadline_ = Clock::now() + d; }

  // Waits for a byte (or the end of the stream) to read.
  bool WaitReadable(BoostError& ec) {
    ec = {};
    if (conn_.WaitReadable(deadline_)) return true;
    ec = boost::beast::error::timeout;
    return false;
  }

  template <class MutableBufferSequence>
  size_t read_some(const MutableBufferSequence& buffers, BoostError& ec) {
    boost::asio::mutable_buffer b = FirstNonEmpty<boost::asio::mutable_buffer>(buffers);
    ec = {};
    if (b.size() == 0) return 0;
    return Done(conn_.ReadSome(b.data(), b.size(), deadline_), ec);
  }

  template <class ConstBufferSequence>
  size_t write_some(const ConstBufferSequence& buffers, BoostError& ec) {
    boost::asio::const_buffer b = FirstNonEmpty<boost::asio::const_buffer>(buffers);
    ec = {};
    if (b.size() == 0) return 0;
    // Small pieces (a reply's head and body) go out together: one send, one TLS record.
    char joined[16384];
    if (b.size() < sizeof joined && boost::asio::buffer_size(buffers) > b.size()) {
      size_t n = boost::asio::buffer_copy(boost::asio::buffer(joined), buffers);
      return Done(conn_.WriteSome(joined, n, deadline_), ec);
    }
    return Done(conn_.WriteSome(b.data(), b.size(), deadline_), ec);
  }

  // Beast's stream concepts also name the throwing overloads; only the error_code ones are ever
  // called, so these are declared and never defined (a use would fail to link).
  template <class MutableBufferSequence>
  size_t read_some(const MutableBufferSequence& buffers);
  template <class ConstBufferSequence>
  size_t write_some(const ConstBufferSequence& buffers);

 private:
  template <class Buffer, class Sequence>
  static Buffer FirstNonEmpty(const Sequence& buffers) {
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers); ++it) {
      Buffer b(*it);
      if (b.size() > 0) return b;
    }
    return Buffer();
  }

  static size_t Done(const Connection::IoResult& r, BoostError& ec) {
    switch (r.status) {
      case Connection::Io::kOk:
        return r.bytes;
      case Connection::Io::kEof:
        ec = boost::asio::error::eof;
        break;
      case Connection::Io::kTimeout:
        ec = boost::beast::error::timeout;
        break;
      case Connection::Io::kError:
        // A TLS failure has no errno: the connection is as good as reset.
        ec = r.error != 0 ? BoostError(r.error, boost::system::system_category())
                          : BoostError(boost::asio::error::connection_reset);
        break;
    }
    return 0;
  }

  Connection& conn_;
  Clock::time_point deadline_ = Clock::now();
};

}  // namespace sandrun::api
