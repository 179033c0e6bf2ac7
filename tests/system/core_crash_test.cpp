// kill -9 test of the actor core (not only of storage): a child process runs
// the broker as spoold does (the writer on its own thread, strict
// durability) and drives it with pushes (client transactionIds, three
// queues, partitions created on the way, pushes spanning queues), pops,
// acks of every status, dead-lettering and seeks. Before each request it
// reports what it sends ("B ...") and after the answer what was acknowledged
// ("D ..."), one line per write on a pipe. The parent kills it at a random
// line, reopens the store and checks against what was acknowledged:
// - every acknowledged push is stored once, where its answer said; the push
//   in flight at the kill is retried by the next child and stored once;
// - offsets of every partition are unique and dense, transaction ids unique;
// - `committed` never behind an acknowledged ack (each completed or
//   dead-lettered offset since the cursor's last seek is done);
// - every acknowledged seek in place: exactly, when nothing touched the
//   group on that queue after it, else `committed` is not below it;
// - every acknowledged dead-lettering has its DLQ entry.
// Then the next child starts on the same store (recovery under the actors).

#include "unit/storage/fixture.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include <chrono>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "actors/broker/broker_actor.hpp"
#include "actors/scheduler.hpp"
#include "actors/writer/writer_actor.hpp"

using namespace spool::test;
namespace ac = spool::actors;

namespace {

constexpr int queues = 3;
constexpr int partitions_per_queue = 4;
constexpr int groups = 2;

std::string queue_name(std::size_t i) {
  return "q" + std::to_string(i);
}

/// A push to retry first (the one in flight when the last child died).
using push_plan
    = std::vector<std::tuple<std::string, std::string, std::string>>;

std::string describe(const push_plan& items) {
  std::string s = "B push";
  for (auto& [q, p, txid] : items)
    s += " " + q + ":" + p + ":" + txid;
  return s + "\n";
}

/// The child: the broker over the store, driven until it is killed.
[[noreturn]] void child_main(const st::store_options& opts, int fd,
                             unsigned seed, int round, push_plan retry) {
  auto fail = [fd](const std::string& what) {
    write_all(fd, "ERR " + what + "\n");
    ::_exit(1);
  };
  auto opened = st::store::open(opts);
  if (!opened)
    fail(st::to_string(opened.err()));
  auto& store = **opened;
  caf::actor_system_config cfg;
  ac::use_scheduler(cfg, "spool", 2);
  caf::actor_system sys{cfg};
  auto writer = ac::spawn_writer(sys, {.env = &store.db()}, true);
  if (!writer)
    fail(spool::to_string(writer.err()));
  ac::broker_config bc;
  bc.node.store = &store;
  bc.node.writer = *writer;
  bc.node.wall = [] {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  auto broker = ac::spawn_broker(sys, bc);
  if (!broker)
    fail(spool::to_string(broker.err()));
  caf::scoped_actor self{sys};
  auto ask = [&](auto reply_type, auto&&... xs) {
    decltype(reply_type) out;
    self->request(*broker, std::chrono::seconds{60}, xs...)
        .receive([&](decltype(reply_type)& r) { out = std::move(r); },
                 [&](caf::error& err) { fail(caf::to_string(err)); });
    return out;
  };
  for (std::size_t q = 0; q < queues; ++q) {
    ac::configure_request req;
    req.queue = queue_name(q);
    req.options.retry_limit = 1;
    req.options.dead_letter_queue = true;
    auto r = ask(ac::configure_reply{}, ac::configure_atom::value, req);
    if (r.failure)
      fail("configure: " + spool::to_string(*r.failure));
  }
  std::mt19937 rng{seed};
  int seq = 0;
  auto push = [&](const push_plan& plan) {
    write_all(fd, describe(plan));
    std::vector<ac::broker_push_item> items;
    for (auto& [q, p, txid] : plan)
      items.push_back({q, {p, msg(R"({"t":")" + txid + R"("})", txid)}});
    auto r = ask(ac::queue_push_reply{}, ac::push_atom::value, items);
    if (r.failure)
      fail("push: " + spool::to_string(*r.failure));
    std::string done = "D push";
    for (std::size_t i = 0; i < plan.size(); ++i) {
      auto& t = r.target_of(i);
      if (t.queue != std::get<0>(plan[i])
          || t.partition != std::get<1>(plan[i]))
        fail("push answered another target");
      done += " " + std::to_string(r.results[i].result.off.value);
    }
    write_all(fd, done + "\n");
  };
  if (!retry.empty())
    push(retry);
  for (;;) {
    ++seq;
    auto q = queue_name(rng() % queues);
    auto g = "g" + std::to_string(rng() % groups);
    auto kind = rng() % 100;
    if (kind < 45) { // a push to one queue, or spanning two
      push_plan plan;
      auto n = 1 + rng() % 5;
      for (std::size_t i = 0; i < n; ++i) {
        auto qi = kind < 38 ? q : queue_name(rng() % queues);
        plan.emplace_back(qi,
                          "p" + std::to_string(rng() % partitions_per_queue),
                          "r" + std::to_string(round) + "-"
                              + std::to_string(seq) + "-" + std::to_string(i));
      }
      push(plan);
    } else if (kind < 85) { // a pop, then an ack of all it delivered
      ac::queue_pop_request req;
      req.group = g;
      req.batch = 1 + rng() % 8;
      req.partitions = 1 + rng() % 2;
      req.lease_id = "L" + std::to_string(round) + "-" + std::to_string(seq);
      write_all(fd, "B pop " + q + " " + g + "\n");
      auto r = ask(ac::queue_pop_reply{}, ac::pop_atom::value, q, req);
      if (r.failure)
        fail("pop: " + spool::to_string(*r.failure));
      write_all(fd, "D pop\n");
      for (auto& d : r.claimed) {
        if (d.reply.messages.empty())
          continue;
        std::vector<spool::ack_request> acks;
        std::string begun = "B ack " + q + " " + d.partition + " " + g;
        for (auto& m : d.reply.messages) {
          spool::ack_request a;
          if (d.reply.lease) {
            a.lease_id = d.reply.lease->id;
            a.lease_epoch = d.reply.lease->epoch;
          }
          a.off = m.frame.off;
          auto s = rng() % 10;
          a.status = s < 7   ? spool::ack_status::completed
                     : s < 9 ? spool::ack_status::failed
                             : spool::ack_status::dlq;
          a.error = "boom";
          acks.push_back(a);
          begun += " " + std::to_string(a.off.value);
        }
        write_all(fd, begun + "\n");
        // As the gateway sends them: the partition by its uuid.
        std::vector<ac::located_ack> located;
        for (auto& a : acks)
          located.push_back({d.partition_uuid, g, a});
        std::vector<ac::ack_reply> replies;
        for (auto& r : ask(std::vector<ac::located_ack_reply>{},
                           ac::ack_atom::value, located))
          replies.push_back(r.reply);
        if (replies.size() != acks.size())
          fail("ack answered " + std::to_string(replies.size()) + " of "
               + std::to_string(acks.size()));
        std::string done = "D ack";
        for (std::size_t i = 0; i < acks.size(); ++i) {
          auto& rep = replies[i];
          if (rep.failure)
            fail("ack: " + spool::to_string(*rep.failure));
          // o: ok and done (completed or dead-lettered), f: ok and failed
          // (retried later), x: refused (nothing changed).
          char c = rep.error != spool::ack_error::none              ? 'x'
                   : rep.dead_lettered                              ? 'd'
                   : acks[i].status == spool::ack_status::completed ? 'o'
                                                                    : 'f';
          done += std::string(" ") + c;
        }
        write_all(fd, done + "\n");
      }
    } else { // a seek of the group: every partition or one
      ac::seek_request req;
      req.group = g;
      if (rng() % 2 == 0)
        req.partition = "p" + std::to_string(rng() % partitions_per_queue);
      switch (rng() % 3) {
      case 0:
        req.target.to_start = true;
        break;
      case 1:
        req.target.to_end = true;
        break;
      default:
        req.target.offset = static_cast<std::int64_t>(rng() % 20);
      }
      write_all(fd, "B seek " + q + " " + g + " "
                        + (req.partition ? *req.partition : "*") + "\n");
      auto r = ask(ac::seek_reply{}, ac::seek_atom::value, q, req);
      std::string done = "D seek";
      if (r.failure) {
        // Only this refusal is expected: a queue or partition not created
        // yet (nothing was written).
        if (r.failure->code != spool::errc::not_found)
          fail("seek: " + spool::to_string(*r.failure));
      } else {
        for (auto& p : r.positions)
          done += " " + p.partition + ":" + std::to_string(p.after.value);
      }
      write_all(fd, done + "\n");
    }
  }
}

/// What the parent knows of one cursor from acknowledged answers.
struct cursor_model {
  /// The last acknowledged seek's `after`; none: no seek yet, or a seek
  /// in flight at a kill may have moved it anywhere.
  std::optional<std::int64_t> floor;
  bool seek_is_last = false;   ///< nothing touched (queue, group) since
  std::set<std::int64_t> done; ///< acknowledged done since the floor
};

struct model {
  /// txid -> (queue, partition, offset) of every acknowledged push.
  std::map<std::string, std::tuple<std::string, std::string, std::int64_t>>
      pushed;
  std::map<std::tuple<std::string, std::string, std::string>, cursor_model>
      cursors; // (queue, partition, group)
  std::set<std::tuple<std::string, std::string, std::string, std::int64_t>>
      dead; // (queue, group, partition, offset)
  std::uint64_t acknowledged = 0;

  void touch(const std::string& q, const std::string& g) {
    for (auto& [key, c] : cursors)
      if (std::get<0>(key) == q && std::get<2>(key) == g)
        c.seek_is_last = false;
  }
};

std::vector<std::string> words(const std::string& line) {
  std::istringstream in{line};
  std::vector<std::string> w;
  for (std::string x; in >> x;)
    w.push_back(x);
  return w;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

/// Applies one begun request and its answer to the model.
void apply(model& m, const std::vector<std::string>& b,
           const std::vector<std::string>& d) {
  ++m.acknowledged;
  if (b[1] == "push") {
    REQUIRE(d.size() == b.size());
    for (std::size_t i = 2; i < b.size(); ++i) {
      auto f = split(b[i], ':');
      auto off = std::stoll(d[i]);
      m.pushed.try_emplace(f[2], f[0], f[1], off);
    }
  } else if (b[1] == "pop") {
    m.touch(b[2], b[3]);
  } else if (b[1] == "ack") {
    auto &q = b[2], &p = b[3], &g = b[4];
    m.touch(q, g);
    REQUIRE(d.size() == b.size() - 3);
    auto& c = m.cursors[{q, p, g}];
    for (std::size_t i = 5; i < b.size(); ++i) {
      auto off = std::stoll(b[i]);
      auto what = d[i - 3];
      if (what == "o" || what == "d")
        c.done.insert(off);
      if (what == "d")
        m.dead.insert({q, g, p, off});
    }
  } else if (b[1] == "seek") {
    m.touch(b[2], b[3]);
    for (std::size_t i = 2; i < d.size(); ++i) {
      auto f = split(d[i], ':');
      auto& c = m.cursors[{b[2], f[0], b[3]}];
      c.floor = std::stoll(f[1]);
      c.seek_is_last = true;
      c.done.clear();
    }
  }
}

/// A request in flight at the kill: what the model can no longer claim.
void forget(model& m, const std::vector<std::string>& b) {
  if (b[1] == "pop" || b[1] == "ack") {
    m.touch(b[2], b[3 + (b[1] == "ack")]);
  } else if (b[1] == "seek") { // it may have moved the cursor anywhere
    for (auto& [key, c] : m.cursors)
      if (std::get<0>(key) == b[2] && std::get<2>(key) == b[3]
          && (b[4] == "*" || std::get<1>(key) == b[4]))
        c = cursor_model{};
  }
}

/// Reads the child's output until `lines` complete lines or its end.
std::vector<std::string> read_lines(int fd, std::size_t lines,
                                    std::string& partial) {
  std::vector<std::string> out;
  char buf[4096];
  while (out.size() < lines) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 60'000) <= 0)
      break; // a hung child: the checks below fail
    auto n = ::read(fd, buf, sizeof(buf));
    if (n <= 0)
      break;
    partial.append(buf, static_cast<std::size_t>(n));
    for (auto nl = partial.find('\n'); nl != std::string::npos;
         nl = partial.find('\n')) {
      out.push_back(partial.substr(0, nl));
      partial.erase(0, nl + 1);
    }
  }
  return out;
}

/// Checks the reopened store against the model; answers how many of
/// `in_flight`'s transaction ids are stored (the retry then meets them as
/// duplicates).
std::size_t check_store(const st::store_options& opts, const model& m,
                        const push_plan& in_flight) {
  auto opened = st::store::open(opts);
  REQUIRE(opened);
  auto t = (*opened)->db().read();
  REQUIRE(t);
  auto qs = st::tables::all_queues(*t);
  REQUIRE(qs);
  std::map<std::string, st::queue_id> qid;
  std::map<std::pair<std::string, std::string>, st::partition_record> parts;
  // txid -> where it is stored; every frame carries a client id.
  std::map<std::string, std::tuple<std::string, std::string, std::int64_t>>
      stored;
  for (auto& q : *qs) {
    qid[q.name] = q.id;
    auto ps = st::tables::partitions_of(*t, q.id);
    REQUIRE(ps);
    for (auto& p : *ps) {
      parts[{q.name, p.name}] = p;
      auto r = st::read_frames(*t, q.id, p.id, st::offset{0}, SIZE_MAX);
      REQUIRE(r);
      REQUIRE(r->frames.size()
              == static_cast<std::size_t>(p.next_offset.value));
      for (std::size_t k = 0; k < r->frames.size(); ++k) {
        auto& f = r->frames[k];
        INFO("queue " << q.name << " partition " << p.name << " frame " << k);
        REQUIRE(f.off.value == static_cast<std::int64_t>(k)); // dense
        auto [it, fresh] = stored.try_emplace(f.data.transaction_id, q.name,
                                              p.name, f.off.value);
        REQUIRE(fresh); // each transaction id once
      }
    }
  }
  for (auto& [txid, where] : m.pushed) {
    INFO("acknowledged push " << txid);
    auto it = stored.find(txid);
    REQUIRE(it != stored.end());
    CHECK(it->second == where);
  }
  for (auto& [key, c] : m.cursors) {
    auto& [q, p, g] = key;
    INFO("cursor of " << g << " on " << q << "/" << p);
    auto part = parts.find({q, p});
    REQUIRE(part != parts.end());
    auto row = st::tables::get_cursor(*t, qid[q], part->second.id, g);
    REQUIRE(row);
    if (!*row) { // never written: only a cursor nothing was acknowledged on
      CHECK(!c.floor);
      CHECK(c.done.empty());
      continue;
    }
    auto& rec = **row;
    if (c.floor) {
      if (c.seek_is_last)
        CHECK(rec.committed.value == *c.floor);
      else
        CHECK(rec.committed.value >= *c.floor);
    }
    for (auto off : c.done) {
      INFO("acknowledged offset " << off);
      bool done = off <= rec.committed.value;
      for (auto& fc : rec.counters)
        if (fc.off.value == off && fc.done)
          done = true;
      CHECK(done);
    }
  }
  for (auto& [q, g, p, off] : m.dead) {
    INFO("dead letter " << q << "/" << p << "@" << off << " of " << g);
    bool found = false;
    auto pid = parts.at({q, p}).id;
    REQUIRE(st::tables::scan_dlq(*t, qid[q], g, [&](const st::dlq_entry& e) {
      if (e.partition == pid && e.message.off.value == off)
        found = true;
      return !found;
    }));
    CHECK(found);
  }
  std::size_t stored_in_flight = 0;
  for (auto& item : in_flight)
    stored_in_flight += stored.count(std::get<2>(item));
  return stored_in_flight;
}

} // namespace

TEST_CASE("every acknowledged push, ack, seek and dead letter survives kill -9 "
          "of the broker",
          "[system][crash]") {
  temp_dir dir;
  st::store_options opts;
  opts.env.dir = dir.path / "db";
  opts.env.initial_map_bytes = std::size_t{4} << 20; // growth under kills too
  // A fresh seed each run, printed with any failure; SPOOL_CRASH_SEED
  // replays one.
  auto seed
      = std::getenv("SPOOL_CRASH_SEED")
            ? static_cast<unsigned>(std::stoul(std::getenv("SPOOL_CRASH_SEED")))
            : static_cast<unsigned>(std::random_device{}());
  INFO("seed " << seed);
  std::mt19937 rng{seed};
  model m;
  push_plan retry;
  constexpr int rounds = 20;
  std::size_t retried = 0;
  std::size_t retried_stored = 0; // durable before the kill, unanswered
  for (int round = 0; round < rounds; ++round) {
    INFO("round " << round);
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    auto child_seed = rng();
    auto pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(fds[0]);
      child_main(opts, fds[1], child_seed, round, retry);
    }
    ::close(fds[1]);
    std::string partial;
    auto lines = read_lines(fds[0], 20 + rng() % 600, partial);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    // What the child wrote before it died: requests it began and finished
    // after the lines read so far count too (each "B" is written before its
    // request is sent, so the last one alone can be in flight).
    auto rest = read_lines(fds[0], SIZE_MAX, partial); // up to EOF
    lines.insert(lines.end(), rest.begin(), rest.end());
    ::close(fds[0]);
    // Pair each "B" with its "D"; the last "B" alone was in flight.
    std::optional<std::vector<std::string>> begun;
    retry.clear();
    for (auto& line : lines) {
      INFO(line);
      auto w = words(line);
      REQUIRE(!w.empty());
      REQUIRE(w[0] != "ERR");
      if (w[0] == "B") {
        REQUIRE(!begun);
        begun = w;
      } else {
        REQUIRE(w[0] == "D");
        REQUIRE(begun);
        REQUIRE(w[1] == (*begun)[1]);
        apply(m, *begun, w);
        begun.reset();
      }
    }
    REQUIRE(lines.size() >= 4); // the child got going
    if (begun) {
      forget(m, *begun);
      if ((*begun)[1] == "push") {
        for (std::size_t i = 2; i < begun->size(); ++i) {
          auto f = split((*begun)[i], ':');
          retry.emplace_back(f[0], f[1], f[2]);
        }
        ++retried;
      }
    }
    retried_stored += check_store(opts, m, retry);
  }
  // The run did what it claims: enough of each kind was acknowledged.
  CHECK(m.pushed.size() > 100);
  std::size_t floors = 0, done = 0;
  for (auto& [key, c] : m.cursors) {
    floors += c.floor.has_value();
    done += c.done.size();
  }
  CHECK(floors > 0);
  CHECK(done > 0);
  CHECK(!m.dead.empty());
  std::size_t exact = 0;
  for (auto& [key, c] : m.cursors)
    exact += c.floor && c.seek_is_last;
  // What the run covered, in the test's output (-s).
  UNSCOPED_INFO("acknowledged "
                << m.acknowledged << " requests: " << m.pushed.size()
                << " pushes, " << done << " done offsets, " << floors
                << " seek floors (" << exact << " exact), " << m.dead.size()
                << " dead letters; " << retried
                << " pushes retried after a kill (" << retried_stored
                << " of their items stored before it)");
}
