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

/// One piece of a copy of a slot's rows, read in key order: the rows, and
/// where the next piece starts (`next`; empty once `last`).
struct copy_piece {
  std::vector<slot_row> rows;
  std::string next;
  bool last = false;
};

/// Where a copy of a slot stands: after entry `seq`, of epoch `epoch`.
struct copy_position {
  std::uint64_t epoch = 0;
  std::uint64_t seq = 0;
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

/// Slot `s`'s rows in `t` from `from` on (empty: the first; else a piece's
/// `next`), in key order, table after table: at least one row when one is
/// left, then as many as keep keys and values within `max_bytes`. The same
/// `t`, `from` and `max_bytes` give the same piece.
expected<copy_piece> read_piece(txn& t, slot_t s, std::string_view from,
                                std::size_t max_bytes);

/// Stages `rows` (a piece's) for slot `s`'s next `install_staged`, after
/// what is staged; `fresh`: drops what was staged first. Refuses a row
/// outside the slot.
expected<void> stage(txn& t, slot_t s, const std::vector<slot_row>& rows,
                     bool fresh);
/// Replaces slot `s`'s rows in every data table with the staged ones (none
/// staged after) and its log with none kept after `at` (so the next entry
/// applied is `at.seq + 1`).
expected<void> install_staged(txn& t, slot_t s, copy_position at);

} // namespace slot_log

} // namespace spool::storage
