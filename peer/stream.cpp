#include "peer/stream.hpp"

namespace spool::peer {

namespace {

/// Bytes asked of the socket per read: before a first frame, and after.
constexpr std::size_t first_chunk = 4 * 1024;
constexpr std::size_t chunk = 64 * 1024;

/// A TLS record's first bytes (a handshake's, or an alert's: the answer of
/// a TLS node to a plain hello).
bool tls_record(const std::string& first) {
  return first.size() >= 2 && (first[0] == '\x16' || first[0] == '\x15')
         && first[1] == '\x03';
}

constexpr const char* same_options
    = ": give every node the same --peer-tls-* options";

std::uint32_t length_at(const std::string& s) {
  auto b = [&](std::size_t i) { return std::uint32_t(std::uint8_t(s[i])); };
  return b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3);
}

} // namespace

stream::stream(asio::ip::tcp::socket sock,
               std::shared_ptr<const tls::context> tls, bool server,
               const std::string& server_name) :
    sock_(std::move(sock)), server_(server), in_(first_chunk) {
  if (tls)
    tls_ = std::make_unique<tls::channel>(std::move(tls), server, server_name);
}

stream::~stream() = default;

std::string stream::start() {
  if (!tls_ || server_)
    return "";
  if (!tls_->start())
    return "TLS: " + tls_->error();
  take_tls_output();
  return "";
}

std::string stream::peer_subject() const {
  return tls_ ? tls_->peer_subject() : std::string{};
}

void stream::close() {
  if (failed_.empty())
    failed_ = "closed here";
  std::error_code ec;
  sock_.close(ec);
  finish_writes(failed_); // (posted: held by the io context, not here)
}

// --- in ---

void stream::read_frame(std::size_t max, read_fn k) {
  max_ = max;
  asio::post(sock_.get_executor(),
             [self = shared_from_this(), k = std::move(k)]() mutable {
               self->advance(std::move(k));
             });
}

void stream::advance(read_fn k) {
  auto deliver = [&k](read_status s, const std::string& why) { k(s, why); };
  if (!sock_.is_open())
    return deliver(read_status::closed, failed_);
  if (plain_.size() >= 4) {
    auto len = length_at(plain_);
    if (len == 0 || len > max_) {
      if (!delivered_any_ && !tls_ && tls_record(first_))
        return deliver(read_status::refused,
                       std::string{"a TLS handshake, but this node's peer "
                                   "links have no TLS"}
                           + same_options);
      return deliver(read_status::refused, "a frame of " + std::to_string(len)
                                               + " bytes (at most "
                                               + std::to_string(max_) + ")");
    }
    if (plain_.size() - 4 >= len) {
      body_.assign(plain_, 4, len);
      plain_.erase(0, 4 + std::size_t{len});
      delivered_any_ = true;
      if (in_.size() < chunk)
        in_.resize(chunk);
      return deliver(read_status::frame, "");
    }
    plain_.reserve(4 + std::size_t{len});
  }
  sock_.async_read_some(
      asio::buffer(in_), [self = shared_from_this(), k = std::move(k)](
                             std::error_code ec, std::size_t n) mutable {
        auto deliver
            = [&k](read_status s, const std::string& why) { k(s, why); };
        // (A probe that connects and leaves, saying nothing, is quiet.)
        if (ec && self->tls_ && !self->tls_->handshake_done()
            && ec != asio::error::operation_aborted
            && (!self->server_ || !self->first_.empty()))
          return deliver(read_status::refused,
                         "closed during the TLS handshake (" + ec.message()
                             + "; the peer's links may have no TLS)"
                             + same_options);
        if (ec)
          return deliver(read_status::closed, ec.message());
        std::string_view got{self->in_.data(), n};
        if (self->first_.size() < 3)
          self->first_.append(got.substr(0, 3 - self->first_.size()));
        if (!self->tls_) {
          self->plain_.append(got);
          return self->advance(std::move(k));
        }
        bool ok = self->tls_->feed(got, self->plain_);
        self->take_tls_output();
        if (ok)
          return self->advance(std::move(k));
        auto why = "TLS: " + self->tls_->error();
        if (!self->tls_->handshake_done() && !tls::looks_like_tls(self->first_))
          why = std::string{"plain text on a TLS peer link"} + same_options;
        deliver(read_status::refused, why);
      });
}

// --- out ---

void stream::write(std::string plain, done_fn done) {
  if (done)
    waiting_.push_back(std::move(done));
  if (!failed_.empty())
    return finish_writes(failed_);
  if (tls_) {
    tls_->seal(plain, pending_);
    if (!tls_->error().empty()) { // nothing more goes out sealed
      failed_ = "TLS: " + tls_->error();
      std::error_code ignore;
      sock_.close(ignore);
      return finish_writes(failed_);
    }
    take_tls_output();
  } else if (pending_.empty()) {
    pending_ = std::move(plain);
  } else {
    pending_.append(plain);
  }
  pump();
}

void stream::take_tls_output() {
  if (tls_->has_output())
    tls_->take_output(pending_);
  pump();
}

void stream::pump() {
  if (!writing_.empty() || !failed_.empty())
    return;
  if (pending_.empty()) {
    if (!waiting_.empty() && (!tls_ || tls_->handshake_done()))
      finish_writes("");
    return;
  }
  writing_.swap(pending_);
  // The writes waiting for these bytes ride on the operation (before the
  // handshake ends, their bytes are still held by the channel).
  std::vector<done_fn> done;
  if (!tls_ || tls_->handshake_done())
    done.swap(waiting_);
  asio::async_write(sock_, asio::buffer(writing_),
                    [self = shared_from_this(), done = std::move(done)](
                        std::error_code ec, std::size_t) mutable {
                      self->writing_.clear();
                      if (ec) {
                        if (self->failed_.empty())
                          self->failed_ = ec.message();
                        std::error_code ignore;
                        self->sock_.close(ignore);
                      }
                      for (auto& d : done)
                        d(ec ? self->failed_ : std::string{});
                      if (ec)
                        return self->finish_writes(self->failed_);
                      self->pump();
                    });
}

void stream::finish_writes(const std::string& err) {
  if (waiting_.empty())
    return;
  // Run from the io context: a `done` may write again.
  asio::post(sock_.get_executor(), [waiting = std::move(waiting_), err] {
    for (auto& d : waiting)
      d(err);
  });
  waiting_.clear();
}

} // namespace spool::peer
