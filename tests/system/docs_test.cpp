// The docs against the real spoold, so that they cannot go stale:
// docs/protocol.md's worked example (each request's bytes, as the document
// shows them, are sent, and each reply is compared with the bytes shown, up
// to the first `…`; its lengths, byte counts and op and feature lists are
// checked against the same answers), and docs/api.md naming every route
// the server serves.

#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "system/mp_fixture.hpp"

namespace spool::test {

namespace {

std::string read_text(const std::string& path) {
  std::ifstream f{path};
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

/// The text of `doc` from the line `heading` to the next `## ` heading.
std::string section(const std::string& doc, const std::string& heading) {
  auto at = doc.find("\n" + heading + "\n");
  REQUIRE(at != std::string::npos);
  auto end = doc.find("\n## ", at + heading.size() + 2);
  return doc.substr(at, end - at);
}

bool is_hex_byte(const std::string& t) {
  return t.size() == 2 && std::isxdigit(static_cast<unsigned char>(t[0]))
         && std::isxdigit(static_cast<unsigned char>(t[1]))
         && !std::isupper(static_cast<unsigned char>(t[0]))
         && !std::isupper(static_cast<unsigned char>(t[1]));
}

/// One code block of the example: its bytes (each line's leading hex
/// pairs, up to the first `…`), whether it stops there, the prose before
/// it, and its lines.
struct block {
  std::string bytes;
  bool prefix = false;
  std::string before;
  std::vector<std::string> lines;
};

std::vector<block> blocks_of(const std::string& text) {
  std::vector<block> out;
  std::size_t pos = 0;
  while (true) {
    auto open = text.find("```\n", pos);
    if (open == std::string::npos)
      break;
    auto close = text.find("\n```", open + 4);
    REQUIRE(close != std::string::npos);
    block b;
    b.before = text.substr(pos, open - pos);
    std::istringstream lines{text.substr(open + 4, close - open - 4)};
    std::string line;
    while (std::getline(lines, line)) {
      b.lines.push_back(line);
      std::istringstream tokens{line};
      std::string t;
      while (!b.prefix && tokens >> t) {
        if (t.find("…") != std::string::npos) {
          b.prefix = true;
        } else if (is_hex_byte(t)) {
          b.bytes += static_cast<char>(std::stoi(t, nullptr, 16));
          continue;
        }
        break; // the line's comment begins
      }
    }
    out.push_back(std::move(b));
    pos = close + 4;
  }
  return out;
}

/// A raw connection: whole frames as bytes, the length included.
class raw_conn : public tcp_conn {
public:
  using tcp_conn::tcp_conn;
  std::string frame(std::chrono::milliseconds timeout = 10s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (buf_.size() < 4)
      if (!fill(deadline))
        throw std::runtime_error("no frame");
    auto b = reinterpret_cast<const unsigned char*>(buf_.data());
    std::size_t len = (std::size_t{b[0]} << 24) | (std::size_t{b[1]} << 16)
                      | (std::size_t{b[2]} << 8) | b[3];
    while (buf_.size() < 4 + len)
      if (!fill(deadline))
        throw std::runtime_error("no whole frame");
    auto f = buf_.substr(0, 4 + len);
    buf_.erase(0, 4 + len);
    return f;
  }
};

std::string hex_of(const std::string& bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
    out += ' ';
  }
  return out;
}

/// The quoted names in `text` after `key: [` up to `]`.
std::vector<std::string> names_after(const std::string& text,
                                     const std::string& key) {
  auto at = text.find(key + ": [");
  REQUIRE(at != std::string::npos);
  auto end = text.find(']', at);
  std::vector<std::string> out;
  std::regex quoted{"\"([a-z_]+)\""};
  auto list = text.substr(at, end - at);
  for (std::sregex_iterator it{list.begin(), list.end(), quoted}, stop;
       it != stop; ++it)
    out.push_back((*it)[1]);
  return out;
}

} // namespace

TEST_CASE("docs/protocol.md's worked example is what the server sends, byte "
          "for byte, and its numbers add up",
          "[system][msgpack][docs]") {
  auto doc = read_text(SPOOL_SOURCE_DIR "/docs/protocol.md");
  auto example = section(doc, "## A worked example, byte by byte");
  auto blocks = blocks_of(example);
  // hello, push, the hello reply, the push reply, the unknown op, its reply
  REQUIRE(blocks.size() == 6);
  auto& hello = blocks[0];
  auto& push = blocks[1];
  auto& hello_reply = blocks[2];
  auto& push_reply = blocks[3];
  auto& nope = blocks[4];
  auto& nope_reply = blocks[5];

  // Every `length: 0xH = D` line says the same number twice, and it is the
  // block's first four bytes; every "N bytes:" before a whole block is its
  // size.
  std::regex length_line{"length: 0x([0-9a-f]+) = ([0-9]+)"};
  std::regex size_said{"([0-9]+) bytes:\\s*$"};
  int lengths = 0, sizes = 0;
  for (auto& b : blocks) {
    std::smatch m;
    if (std::regex_search(b.lines.front(), m, length_line)) {
      ++lengths;
      auto said = std::stoul(m[1], nullptr, 16);
      CHECK(said == std::stoul(m[2]));
      REQUIRE(b.bytes.size() >= 4);
      auto p = reinterpret_cast<const unsigned char*>(b.bytes.data());
      CHECK(said
            == ((std::size_t{p[0]} << 24) | (std::size_t{p[1]} << 16)
                | (std::size_t{p[2]} << 8) | p[3]));
    }
    if (!b.prefix && std::regex_search(b.before, m, size_said)) {
      ++sizes;
      CHECK(std::stoul(m[1]) == b.bytes.size());
    }
  }
  // Every block but the one-line error reply says its length; every whole
  // block is announced with its size: none of these checks ran vacuously.
  CHECK(lengths == 5);
  CHECK(sizes == 4);
  CHECK(hello_reply.bytes.size() >= 30);
  CHECK(push_reply.bytes.size() >= 40);
  // "Body: 1 + 4 + 9 + 9 = 23 bytes." adds up, and is the request's body.
  std::regex body_sum{"Body: ([0-9 +]+) = ([0-9]+) bytes"};
  std::vector<std::size_t> sums;
  for (std::sregex_iterator it{example.begin(), example.end(), body_sum}, stop;
       it != stop; ++it) {
    std::size_t total = 0;
    std::istringstream terms{(*it)[1]};
    std::string t;
    while (terms >> t)
      if (t != "+")
        total += std::stoul(t);
    CHECK(total == std::stoul((*it)[2]));
    sums.push_back(total);
  }
  CHECK(sums
        == std::vector<std::size_t>{hello.bytes.size() - 4,
                                    push.bytes.size() - 4});
  CHECK_FALSE(hello.prefix);
  CHECK_FALSE(push.prefix);
  CHECK(hello_reply.prefix);
  CHECK(push_reply.prefix);
  CHECK_FALSE(nope.prefix);
  CHECK_FALSE(nope_reply.prefix);

  spoold_server srv;
  raw_conn c{srv.mp_port()};
  c.send_raw(hello.bytes);
  auto got = c.frame();
  CHECK(hex_of(got.substr(0, hello_reply.bytes.size()))
        == hex_of(hello_reply.bytes));
  c.send_raw(push.bytes);
  auto pushed = c.frame();
  CHECK(hex_of(pushed.substr(0, push_reply.bytes.size()))
        == hex_of(push_reply.bytes));
  c.send_raw(nope.bytes);
  CHECK(hex_of(c.frame()) == hex_of(nope_reply.bytes));

  // The counts the prose gives, and Versioning's lists, are the hello's.
  auto reply = json::from_msgpack(got.begin() + 4, got.end());
  std::smatch m;
  REQUIRE(
      std::regex_search(example, m,
                        std::regex{"has ([0-9]+)\\s+body\\s+bytes\\s+with\\s+"
                                   "this\\s+server's\\s+([0-9]+)\\s+"
                                   "ops\\s+and\\s+([0-9]+)\\s+"
                                   "features"}));
  CHECK(std::stoul(m[1]) == got.size() - 4);
  CHECK(std::stoul(m[2]) == reply["ops"].size());
  CHECK(std::stoul(m[3]) == reply["features"].size());
  auto versioning = section(doc, "## Versioning");
  CHECK(names_after(versioning, "ops")
        == reply["ops"].get<std::vector<std::string>>());
  CHECK(names_after(versioning, "features")
        == reply["features"].get<std::vector<std::string>>());
  // The push was stored as the example says: one message, offset 0.
  auto p = json::from_msgpack(pushed.begin() + 4, pushed.end());
  CHECK(p["items"][0]["offset"] == 0);
  CHECK(p["items"][0]["queueName"] == "orders");
}

TEST_CASE("docs/api.md documents every route the HTTP door serves",
          "[system][http][docs]") {
  auto doc = read_text(SPOOL_SOURCE_DIR "/docs/api.md");
  spoold_server srv;
  // The routes, as the Prometheus page labels them ("GET /api/v1/pop").
  auto page = srv.get("/metrics/prometheus").body;
  std::set<std::string> routes;
  std::regex label{"route=\"([A-Z]+ /[^\"]*)\""};
  for (std::sregex_iterator it{page.begin(), page.end(), label}, stop;
       it != stop; ++it)
    routes.insert((*it)[1]);
  CHECK(routes.size() > 50);
  for (auto& r : routes) {
    auto space = r.find(' ');
    auto method = r.substr(0, space), path = r.substr(space + 1);
    // A section of its own, or a row of the 501 table naming the method
    // and the path.
    bool heading = doc.find("### `" + r + "`") != std::string::npos;
    bool row = false;
    std::istringstream lines{doc};
    std::string line;
    while (!row && std::getline(lines, line))
      row = line.starts_with("| ")
            && line.find("`" + method + "`") != std::string::npos
            && line.find("| `" + path + "` |") != std::string::npos;
    INFO(r);
    CHECK((heading || row));
  }
}

} // namespace spool::test
