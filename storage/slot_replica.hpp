#pragma once

/// What a replica of a slot keeps besides its slot log's entries
/// (docs/cluster.md): its hard state, the epoch of the entry before the first
/// one kept, and a copy of the slot's whole state for a follower the log
/// cannot bring up to date. Rows beside the slot's meta in the slot log
/// table (slot · "r", slot · "b"); the copy is every data table's rows of
/// the slot's key range.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "storage/error.hpp"
#include "storage/lmdb.hpp"
#include "storage/slot_log.hpp"

namespace spool::storage {

/// A replica's hard state: the epoch it promised, that epoch's leader (its
/// node index + 1; 0: none known) and whether it is damaged. A slot never
/// fenced: all zero.
struct slot_replica {
  std::uint64_t epoch = 0;
  std::uint32_t leader = 0;
  bool damaged = false;

  friend bool operator==(const slot_replica&, const slot_replica&) = default;

  template <class F>
  friend auto fields(F& f, slot_replica& x) {
    return f(x.epoch, x.leader, x.damaged);
  }
};

/// One row of a slot's state: its table (`dbis::data_table` index), key and
/// value.
struct slot_row {
  std::uint8_t table = 0;
  std::string key;
  std::string value;

  friend bool operator==(const slot_row&, const slot_row&) = default;

  template <class F>
  friend auto fields(F& f, slot_row& x) {
    return f(x.table, x.key, x.value);
  }
};

/// A slot's whole state after entry `seq` (of epoch `epoch`).
struct slot_copy {
  std::uint64_t epoch = 0;
  std::uint64_t seq = 0;
  std::vector<slot_row> rows;

  template <class F>
  friend auto fields(F& f, slot_copy& x) {
    return f(x.epoch, x.seq, x.rows);
  }
};

namespace slot_log {

expected<slot_replica> replica(txn& t, slot_t s);
expected<void> put_replica(txn& t, slot_t s, const slot_replica& r);

/// The epoch of the entry just before slot `s`'s first kept one: the last
/// one trimmed, or a copy's (1 when no row says: a log trimmed by a spoold
/// that did not keep it, which stamped epoch 1 only). Meaningful only when
/// the slot's `first_seq` is above 1.
expected<std::uint64_t> base_epoch(txn& t, slot_t s);
/// Records it (`append` trimming, `install`).
expected<void> put_base_epoch(txn& t, slot_t s, std::uint64_t epoch);

/// The epoch of kept entry `seq` of slot `s`, read without decoding the
/// entry; none when it is not kept.
expected<std::optional<std::uint64_t>> epoch_of(txn& t, slot_t s,
                                                std::uint64_t seq);

/// Slot `s`'s state as of `t`, through its last entry.
expected<slot_copy> copy(txn& t, slot_t s);
/// As `copy`, none once its rows' keys and values pass `max_bytes` (it
/// stops reading there).
expected<std::optional<slot_copy>> copy(txn& t, slot_t s,
                                        std::size_t max_bytes);

/// Replaces slot `s`'s rows in every data table with `c`'s and its log with
/// none kept after `c.seq` (so the next entry applied is `c.seq + 1`).
expected<void> install(txn& t, slot_t s, const slot_copy& c);

} // namespace slot_log

} // namespace spool::storage
