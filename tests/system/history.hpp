#pragma once

// A history checker for runs against a cluster (docs/cluster.md, "Tests"):
// the load records every operation it sent and whether it was
// acknowledged, then the final state is read; `check` lists every way the
// final state contradicts what was acknowledged. Pure: no Catch, no I/O,
// so its own tests plant each violation (history_test.cpp).
//
// Its premises, which the load keeps: one producer per partition, each
// waiting for one push's answer before the next (so acknowledged pushes of
// a partition are in its order); acks are cumulative (`ack_all`), so a
// group's committed offset is at least every offset it acked; a group that
// seeks does nothing else.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace spool::test {

struct history {
  struct push {
    std::string partition;
    std::string txn;
    std::string payload;
    bool acked = false;                 ///< false: the outcome is unknown
    std::optional<std::int64_t> offset; ///< the answer's, when acked
  };
  struct entry {
    std::string partition;
    std::int64_t offset = 0;
    std::string txn;
    std::string payload;
  };
  struct ack {
    std::string group;
    std::string partition;
    std::int64_t offset = 0;
  };
  struct seek {
    std::string group;
    std::string partition;
    std::int64_t after = -1; ///< the committed offset it sets
    bool acked = false;      ///< false: the outcome is unknown
  };

  /// In the order each producer sent them.
  std::vector<push> pushes;
  /// What pops delivered during the run.
  std::vector<entry> observed;
  /// Acks the server answered as successful.
  std::vector<ack> acks;
  /// In the order they were sent, per group and partition.
  std::vector<seek> seeks;

  /// The final state: each partition's entries as read from offset 0, and
  /// each group's committed offset per partition (-1: none).
  std::map<std::string, std::vector<entry>> final_log;
  std::map<std::pair<std::string, std::string>, std::int64_t> final_cursor;
};

/// Every contradiction between what was acknowledged and the final state,
/// one sentence each; empty when the history holds.
inline std::vector<std::string> check(const history& h) {
  std::vector<std::string> bad;
  auto where = [](const std::string& p, std::int64_t o) {
    return "partition " + p + " offset " + std::to_string(o);
  };
  // One payload per offset, one offset per transactionId, offsets in order.
  std::map<std::pair<std::string, std::int64_t>, const history::entry*> at;
  std::map<std::pair<std::string, std::string>, std::int64_t> offset_of;
  for (auto& [p, log] : h.final_log) {
    std::optional<std::int64_t> last;
    for (auto& e : log) {
      if (last && e.offset <= *last)
        bad.push_back(where(p, e.offset) + " is read after offset "
                      + std::to_string(*last));
      last = e.offset;
      if (!at.emplace(std::pair{p, e.offset}, &e).second)
        bad.push_back(where(p, e.offset) + " holds two entries");
      auto [it, fresh] = offset_of.emplace(std::pair{p, e.txn}, e.offset);
      if (!fresh)
        bad.push_back("transactionId " + e.txn + " is at two offsets of " + p
                      + ": " + std::to_string(it->second) + " and "
                      + std::to_string(e.offset));
    }
  }
  for (auto& o : h.observed) {
    auto it = at.find({o.partition, o.offset});
    if (it == at.end())
      bad.push_back(where(o.partition, o.offset) + " was delivered (" + o.txn
                    + ") and is gone");
    else if (it->second->txn != o.txn || it->second->payload != o.payload)
      bad.push_back(where(o.partition, o.offset) + " was delivered as " + o.txn
                    + " and now holds " + it->second->txn);
  }
  // No acknowledged push lost, each where its answer said, in its order.
  std::map<std::string, std::int64_t> last_acked;
  for (auto& p : h.pushes) {
    if (!p.acked)
      continue;
    auto it = offset_of.find({p.partition, p.txn});
    if (it == offset_of.end()) {
      bad.push_back("acknowledged push " + p.txn + " to " + p.partition
                    + " is lost");
      continue;
    }
    if (p.offset && *p.offset != it->second)
      bad.push_back("acknowledged push " + p.txn + " was answered offset "
                    + std::to_string(*p.offset) + " and is at "
                    + std::to_string(it->second));
    if (at.at({p.partition, it->second})->payload != p.payload)
      bad.push_back("acknowledged push " + p.txn + " holds another payload");
    auto [prev, first] = last_acked.emplace(p.partition, it->second);
    if (!first && it->second <= prev->second)
      bad.push_back("acknowledged push " + p.txn + " is at "
                    + where(p.partition, it->second)
                    + ", not after the one acknowledged before it");
    prev->second = it->second;
  }
  auto cursor = [&](const std::string& g, const std::string& p) {
    auto it = h.final_cursor.find({g, p});
    return it == h.final_cursor.end() ? std::optional<std::int64_t>{}
                                      : std::optional{it->second};
  };
  // Committed cursors never behind an acknowledged ack.
  for (auto& a : h.acks) {
    auto c = cursor(a.group, a.partition);
    if (!c || *c < a.offset)
      bad.push_back("group " + a.group + " acked "
                    + where(a.partition, a.offset)
                    + " and its committed offset is "
                    + (c ? std::to_string(*c) : std::string{"none"}));
  }
  // No acknowledged seek undone: the last acknowledged one holds, or one
  // sent after it whose outcome is unknown.
  struct since_acked {
    bool acked = false;             ///< one was acknowledged
    std::set<std::int64_t> allowed; ///< it, and unknown ones after it
  };
  std::map<std::pair<std::string, std::string>, since_acked> may;
  for (auto& s : h.seeks) {
    auto& m = may[{s.group, s.partition}];
    if (s.acked) {
      m.acked = true;
      m.allowed.clear();
    }
    m.allowed.insert(s.after);
  }
  for (auto& [gp, m] : may) {
    if (!m.acked)
      continue;
    auto c = cursor(gp.first, gp.second);
    if (!c || m.allowed.count(*c) == 0)
      bad.push_back("group " + gp.first + " on " + gp.second
                    + ": an acknowledged seek is undone (committed offset "
                    + (c ? std::to_string(*c) : std::string{"none"}) + ")");
  }
  return bad;
}

} // namespace spool::test
