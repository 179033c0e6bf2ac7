#pragma once

// System tests over msgpack: a blocking client of the msgpack door over a
// plain socket, encoding with nlohmann::json's msgpack codec (independent
// of the server's), so that a test can pipeline, send broken frames, or
// hang up mid-request. Every wait has a timeout.

#include <deque>

#include "system/http_fixture.hpp"

namespace spool::test {

/// A frame: the 4-byte big-endian length, then the bytes.
inline std::string frame_of(const std::string& body) {
  auto n = static_cast<std::uint32_t>(body.size());
  std::string f{static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                static_cast<char>(n >> 8), static_cast<char>(n)};
  return f + body;
}

inline std::string frame_of(const json& j) {
  auto bytes = json::to_msgpack(j);
  return frame_of(std::string{bytes.begin(), bytes.end()});
}

/// A msgpack bin value.
inline json bin(const std::string& bytes) {
  return json::binary(std::vector<std::uint8_t>(bytes.begin(), bytes.end()));
}

/// A bin's bytes as text.
inline std::string text_of(const json& b) {
  auto& v = b.get_binary();
  return {v.begin(), v.end()};
}

class mp_conn : public tcp_conn {
public:
  /// Connects and says hello (unless `greet` is false).
  explicit mp_conn(std::uint16_t port, bool greet = true) : tcp_conn(port) {
    if (greet) {
      auto r = call({{"op", "hello"}, {"version", 1}});
      if (!r.value("ok", false))
        throw std::runtime_error("hello refused: " + r.dump());
    }
  }

  /// Sends `req` with the next id; answers that id.
  std::uint64_t send(json req) {
    auto id = next_id_++;
    req["id"] = id;
    send_raw(frame_of(req));
    return id;
  }

  /// The next frame, or none when the server closed or nothing came.
  std::optional<json> read_frame(std::chrono::milliseconds timeout = 15s) {
    if (!stash_.empty()) {
      auto j = std::move(stash_.front());
      stash_.pop_front();
      return j;
    }
    return read_wire(timeout);
  }

  /// The answer to request `id` (other answers are kept for later reads).
  json answer(std::uint64_t id, std::chrono::milliseconds timeout = 15s) {
    for (auto it = stash_.begin(); it != stash_.end(); ++it)
      if ((*it)["id"] == id) {
        auto j = std::move(*it);
        stash_.erase(it);
        return j;
      }
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      auto j = read_wire(std::max(left, std::chrono::milliseconds{1}));
      if (!j)
        throw std::runtime_error("no answer to request " + std::to_string(id));
      if ((*j)["id"] == id)
        return *j;
      stash_.push_back(std::move(*j));
    }
  }

  json call(json req, std::chrono::milliseconds timeout = 15s) {
    return answer(send(std::move(req)), timeout);
  }

  /// `call`, and the answer must be ok.
  json ok(json req) {
    auto r = call(req);
    if (!r.value("ok", false))
      throw std::runtime_error("not ok: " + req.dump() + " -> " + r.dump());
    return r;
  }

private:
  std::optional<json> read_wire(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (buf_.size() < 4)
      if (!fill(deadline))
        return std::nullopt;
    auto b = reinterpret_cast<const unsigned char*>(buf_.data());
    std::size_t len = (std::size_t{b[0]} << 24) | (std::size_t{b[1]} << 16)
                      | (std::size_t{b[2]} << 8) | b[3];
    while (buf_.size() < 4 + len)
      if (!fill(deadline))
        return std::nullopt;
    auto j = json::from_msgpack(buf_.begin() + 4,
                                buf_.begin() + 4 + static_cast<long>(len));
    buf_.erase(0, 4 + len);
    return j;
  }

  std::uint64_t next_id_ = 1;
  std::deque<json> stash_;
};

/// Pushes one message to `queue` (and `partition`); the answer.
inline json push_one(mp_conn& c, const std::string& queue, json payload,
                     const std::string& partition = "Default") {
  return c.ok({{"op", "push"},
               {"items",
                {{{"queue", queue},
                  {"partition", partition},
                  {"payload", std::move(payload)}}}}});
}

/// The error code of an answer ("" when ok).
inline std::string code_of(const json& r) {
  return r.value("ok", false) ? std::string{}
                              : r["error"]["code"].get<std::string>();
}

inline std::string message_of(const json& r) {
  return r.value("ok", false) ? std::string{}
                              : r["error"]["message"].get<std::string>();
}

} // namespace spool::test
