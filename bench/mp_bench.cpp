// The msgpack door through the client library (client/) against a real
// spoold (started here, strict durability unless told):
//
//   --mode push     pushes batches of B messages of S bytes (binary) to P
//                   partitions of one queue for T seconds, with R requests
//                   in flight on one connection: msgs/s, and CPU-seconds per
//                   million messages of spoold (from /proc) and of this
//                   client.
//   --mode consume  fills the queue first (as push, N messages), then pops
//                   batches of B as one consumer group, R pops in flight,
//                   each answered batch acked with one ack request (one
//                   cumulative `upTo` item per partition lease; `--acks
//                   each`: one item per message), until all N are
//                   consumed: msgs/s and CPU of the consume phase. Pops ask
//                   for the compact answer (`--shape full`: the full one).
//
// Acceptance (issue 14): push >= 1,000,000 msgs/s (goal 2,000,000) and
// consume >= 1,000,000 msgs/s at B = 1000, S = 100; see bench/README.md.

#include <atomic>
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "client/client.hpp"
#include "spoold_child.hpp"
#include "tls/context.hpp"
#include "window.hpp"

namespace {

using clk = std::chrono::steady_clock;
using namespace spool;
using bench::window;

struct options {
  std::string mode = "push";
  std::string spoold = SPOOLD_PATH;
  int port = 0; ///< a running spoold's msgpack port
  int batch = 1000;
  int bytes = 100;
  int partitions = 8;
  int in_flight = 16;
  double seconds = 5;
  long messages = 2'000'000;
  std::string durability = "strict";
  /// Acks name every message (transactionId) instead of one cumulative
  /// `upTo` item per partition lease.
  bool per_message_acks = false;
  /// Pops ask for the full answer shape instead of the compact one.
  bool full_shape = false;
  /// The queue has encryptionEnabled (spoold gets a key): the cost of
  /// encryption at rest against a run without.
  bool encrypt = false;
  /// A folder with cert.pem and key.pem (a certificate for 127.0.0.1,
  /// its own CA): the door and the client speak TLS.
  std::string tls_dir;
};

/// The options (`--help` lists them); a bad one exits 2.
options parse(int argc, char** argv) {
  options o;
  std::string acks = "upto", shape = "compact";
  CLI::App app{"msgpack through the client library against a real spoold "
               "(bench/README.md)"};
  app.add_option("--mode", o.mode)->check(CLI::IsMember({"push", "consume"}));
  app.add_option("--spoold", o.spoold, "the spoold to start");
  app.add_option("--port", o.port, "a running spoold's msgpack port");
  app.add_option("--batch", o.batch);
  app.add_option("--bytes", o.bytes);
  app.add_option("--partitions", o.partitions);
  app.add_option("--in-flight", o.in_flight);
  app.add_option("--seconds", o.seconds);
  app.add_option("--messages", o.messages);
  app.add_option("--durability", o.durability);
  app.add_option("--acks", acks)->check(CLI::IsMember({"upto", "each"}));
  app.add_option("--shape", shape)->check(CLI::IsMember({"compact", "full"}));
  app.add_option("--tls-dir", o.tls_dir,
                 "cert.pem and key.pem for 127.0.0.1: TLS on the msgpack "
                 "door (docs/security.md)");
  app.add_flag("--encrypt", o.encrypt,
               "the queue encrypts its payloads at rest (AES-256-GCM)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e) == 0 ? 0 : 2);
  }
  o.per_message_acks = acks == "each";
  o.full_shape = shape == "full";
  return o;
}

/// One push request's fields, made once and sent again and again (the
/// cost measured is the server's and the wire's, not the encoding's).
client::encoded_items make_batch(const options& o, int partition) {
  std::vector<node::push_item> items;
  for (int i = 0; i < o.batch; ++i) {
    node::push_item it;
    it.queue = "bench";
    it.partition = "p" + std::to_string(partition);
    it.payload.assign(static_cast<std::size_t>(o.bytes), 'x');
    it.binary = true;
    items.push_back(std::move(it));
  }
  return *client::encode_items(std::move(items));
}

/// Pushes for `seconds`, or until `total` messages; returns messages pushed.
long push_phase(const options& o, client::connection& c, double seconds,
                long total) {
  std::vector<client::encoded_items> batches;
  for (int p = 0; p < o.partitions; ++p)
    batches.push_back(make_batch(o, p));
  std::atomic<long> pushed{0};
  long sent = 0;
  int next = 0;
  auto end = clk::now() + std::chrono::duration<double>(seconds);
  window w{o.in_flight};
  w.run([&] {
    if (clk::now() >= end || sent >= total)
      return false;
    sent += o.batch;
    auto& b = batches[static_cast<std::size_t>(next++ % o.partitions)];
    c.request(
        "push", [&b](mp::writer& wr) { client::write_items(wr, b); },
        [&](expected<client::reply_ptr> r) {
          if (r)
            pushed += o.batch;
          else
            std::fprintf(stderr, "push failed: %s\n",
                         to_string(r.err()).c_str());
          w.done(bool(r));
        });
    return true;
  });
  return pushed.load();
}

/// Pops and acks until `total` are consumed; returns messages consumed.
long consume_phase(const options& o, client::connection& c, long total) {
  std::atomic<long> consumed{0};
  std::atomic<int> empty_in_a_row{0};
  window w{o.in_flight};
  node::pop_request pop;
  pop.queue = "bench";
  pop.group = "bench-consumer";
  pop.batch = static_cast<std::size_t>(o.batch);
  w.run([&] {
    if (consumed.load() >= total || empty_in_a_row.load() > 1000)
      return false;
    c.request(
        "pop",
        [&](mp::writer& wr) { client::write_pop(wr, pop, !o.full_shape); },
        [&](expected<client::reply_ptr> r) {
          if (!r) {
            std::fprintf(stderr, "pop failed: %s\n",
                         to_string(r.err()).c_str());
            return w.done(false);
          }
          auto got = client::read_pop((*r)->root());
          if (got.messages.empty()) {
            ++empty_in_a_row;
            return w.done(true);
          }
          empty_in_a_row = 0;
          auto ack = o.per_message_acks ? client::ack_each(got)
                                        : client::ack_of(got);
          auto n = static_cast<long>(got.messages.size());
          c.request(
              "ack", [ack](mp::writer& wr) { client::write_ack(wr, ack); },
              [&, n](expected<client::reply_ptr> a) {
                if (a)
                  consumed += n;
                else
                  std::fprintf(stderr, "ack failed: %s\n",
                               to_string(a.err()).c_str());
                w.done(bool(a));
              });
        });
    return true;
  });
  return consumed.load();
}

void report(const char* what, long msgs, double secs, double server_cpu,
            double client_cpu) {
  double m = static_cast<double>(msgs) / 1e6;
  std::printf("%s: %ld msgs in %.2f s = %.0f msgs/s; spoold %.2f CPU-s/M, "
              "client %.2f CPU-s/M\n",
              what, msgs, secs, static_cast<double>(msgs) / secs,
              server_cpu / m, client_cpu / m);
}

} // namespace

int main(int argc, char** argv) {
  auto o = parse(argc, argv);
  spool::bench::spoold_child s;
  if (o.encrypt)
    s.extra = {"--encryption-key", std::string(64, 'e')};
  client::options co;
  if (!o.tls_dir.empty()) {
    s.extra.insert(s.extra.end(), {"--tls-cert-file", o.tls_dir + "/cert.pem",
                                   "--tls-key-file", o.tls_dir + "/key.pem"});
    tls::settings ts;
    ts.ca_file = o.tls_dir + "/cert.pem";
    auto ctx = tls::context::client(ts);
    if (!ctx) {
      std::fprintf(stderr, "TLS: %s\n", ctx.err().message.c_str());
      return 2;
    }
    co.tls = *ctx;
  }
  s.start(o.spoold, 0, o.durability);
  co.port = static_cast<std::uint16_t>(o.port ? o.port : s.mp_port);
  co.request_timeout = std::chrono::seconds{60};
  client::connection c{co};
  if (o.encrypt) {
    node::configure_request conf;
    conf.queue = "bench";
    conf.options.encryption_enabled = true;
    client::client admin{co};
    auto r = admin.configure(conf);
    if (!r || !r->options.encryption_enabled.value_or(false)) {
      std::fprintf(stderr, "configure encryptionEnabled failed: %s\n",
                   r ? "not enabled" : r.err().message.c_str());
      return 1;
    }
  }
  if (o.mode == "push") {
    auto cpu0 = s.cpu();
    auto self0 = spool::bench::self_cpu();
    auto t0 = clk::now();
    auto n = push_phase(o, c, o.seconds, std::numeric_limits<long>::max());
    double secs = std::chrono::duration<double>(clk::now() - t0).count();
    report("push", n, secs, s.cpu() - cpu0, spool::bench::self_cpu() - self0);
    return n > 0 ? 0 : 1;
  }
  if (o.mode == "consume") {
    auto filled = push_phase(o, c, 1e9, o.messages);
    std::printf("filled %ld messages\n", filled);
    auto cpu0 = s.cpu();
    auto self0 = spool::bench::self_cpu();
    auto t0 = clk::now();
    auto n = consume_phase(o, c, filled);
    double secs = std::chrono::duration<double>(clk::now() - t0).count();
    report("consume", n, secs, s.cpu() - cpu0,
           spool::bench::self_cpu() - self0);
    return n == filled ? 0 : 1;
  }
  std::fprintf(stderr, "--mode push | consume\n");
  return 2;
}
