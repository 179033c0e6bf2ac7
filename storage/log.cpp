#include "storage/log.hpp"
#include "storage/traces.hpp"

#include <algorithm>
#include <string_view>

#include "storage/keys.hpp"
#include "storage/tables.hpp"
#include "vocab/message_id.hpp"

namespace spool::storage {

namespace {

std::size_t approx_size(const frame& f) {
  // A generated id is written as the message id (36 bytes).
  auto id = f.origin == txid_origin::generated && f.transaction_id.empty()
                ? std::size_t{36}
                : f.transaction_id.size();
  std::size_t n
      = 16 + id + f.trace_id.size() + f.producer_sub.size() + f.payload.size();
  for (auto& [k, v] : f.headers)
    n += 4 + k.size() + v.size();
  return n;
}

bool has_prefix(std::string_view key, std::string_view prefix) {
  return key.substr(0, prefix.size()) == prefix;
}

} // namespace

// -- partition_log ------------------------------------------------------------

partition_log::partition_log(partition_record rec, segment_limits seg,
                             frame_limits frames) :
    durable_(std::move(rec)),
    seg_(seg),
    frames_(frames),
    next_(durable_.next_offset),
    last_stamp_(durable_.last_created_at) {
}

expected<sealed_append> partition_log::seal(txn& read,
                                            std::span<const frame> frames,
                                            micros now, segment_encoder& enc,
                                            std::int64_t dedup_window_s) {
  auto w = describe_partition(durable_.queue, durable_.id);
  if (frames.empty())
    return make_error(ec::invalid_argument, w, ": append without frames");
  for (std::size_t i = 0; i < frames.size(); ++i)
    if (auto ok = check_frame(frames[i], frames_); !ok)
      return make_error(ok.err().code, w, ": frames[", i,
                        "]: ", ok.err().message);
  sealed_append out;
  out.first = next_;
  out.results.reserve(frames.size());
  std::vector<const frame*> stored;
  stored.reserve(frames.size());
  std::unordered_map<std::string_view, offset> in_request;
  auto next = next_;
  // Stored ids count while younger than the window (0 = while retained).
  micros window_start = INT64_MIN;
  if (dedup_window_s > 0 && dedup_window_s < now / 1'000'000)
    window_start = now - dedup_window_s * 1'000'000;
  for (auto& f : frames) {
    if (f.origin == txid_origin::client) {
      std::optional<offset> original;
      if (auto it = in_request.find(f.transaction_id); it != in_request.end())
        original = it->second;
      else if (auto jt = in_flight_.find(f.transaction_id);
               jt != in_flight_.end()) {
        original = jt->second;
        out.mutations.emplace_back(mut::expect_dedup{
            durable_.queue, durable_.id, f.transaction_id, jt->second});
      } else {
        auto rec = tables::get_dedup(read, durable_.queue, durable_.id,
                                     f.transaction_id);
        if (!rec)
          return std::move(rec).err();
        // Ids of deleted segments are forgotten; ignore any left behind.
        if (*rec && (*rec)->off >= durable_.watermark
            && (*rec)->created_at >= window_start)
          original = (*rec)->off;
      }
      if (original) {
        out.results.push_back({frame_result::duplicate, *original});
        continue;
      }
      in_request.emplace(f.transaction_id, next);
      out.pending_ids.push_back(f.transaction_id);
    }
    out.results.push_back({frame_result::queued, next});
    stored.push_back(&f);
    next = next + 1;
  }
  out.next = next;
  out.created_at = std::max(now, last_stamp_);
  // Cut the stored frames into segments, all stamped with this commit.
  auto base = out.first;
  std::size_t begin = 0;
  while (begin < stored.size()) {
    std::size_t end = begin;
    std::size_t bytes = 0;
    while (end < stored.size() && end - begin < seg_.max_frames) {
      auto size
          = approx_size(*stored[end]) + enc.added_per_payload(*stored[end]);
      if (end > begin && bytes + size > seg_.max_bytes)
        break;
      bytes += size;
      ++end;
    }
    std::span<const frame* const> part{stored.data() + begin, end - begin};
    auto bytes_enc = enc.encode(base, out.created_at, part, durable_.uuid);
    if (!bytes_enc)
      return make_error(bytes_enc.err().code, w, ": ", bytes_enc.err().message);
    mut::append_segment m;
    m.queue = durable_.queue;
    m.partition = durable_.id;
    m.base = base;
    m.frame_count = static_cast<std::uint32_t>(part.size());
    m.created_at = out.created_at;
    m.bytes = std::move(*bytes_enc);
    for (std::size_t i = 0; i < part.size(); ++i)
      if (part[i]->origin == txid_origin::client)
        m.client_ids.emplace_back(part[i]->transaction_id,
                                  base + static_cast<std::int64_t>(i));
    out.mutations.emplace_back(std::move(m));
    base = base + static_cast<std::int64_t>(part.size());
    begin = end;
  }
  // Commit the in-memory state only now that nothing can fail.
  if (!stored.empty()) {
    pending_seal ps{out.first, pending_seal::in_flight, {}};
    for (auto& m : out.mutations)
      if (auto* a = std::get_if<mut::append_segment>(&m))
        ps.segments.push_back(mut::append_segment{a->queue,
                                                  a->partition,
                                                  a->base,
                                                  a->frame_count,
                                                  a->created_at,
                                                  {},
                                                  {}});
    order_.push_back(std::move(ps));
  }
  next_ = next;
  if (!stored.empty())
    last_stamp_ = out.created_at;
  for (auto& [id, off] : in_request)
    in_flight_.emplace(std::string{id}, off);
  return out;
}

void partition_log::durable(const sealed_append& s) {
  settle(s, pending_seal::durable);
}

void partition_log::failed(const sealed_append& s) {
  settle(s, pending_seal::failed);
}

void partition_log::lost(const sealed_append& s) {
  settle(s, pending_seal::failed, false);
}

void partition_log::settle(const sealed_append& s,
                           pending_seal::state_t outcome, bool give_back) {
  for (auto& id : s.pending_ids)
    in_flight_.erase(id);
  // Only seals that stored frames are tracked (an all-duplicate seal shares
  // its `first` with the next seal).
  for (auto& ps : order_)
    if (s.next > s.first && ps.first == s.first
        && ps.state == pending_seal::in_flight) {
      ps.state = outcome;
      ps.keep_gap = !give_back;
      break;
    }
  // Failed seals with nothing sealed after them give their offsets back: the
  // next seal reuses them, so a refused or failed push leaves no gap.
  while (!order_.empty() && order_.back().state == pending_seal::failed
         && !order_.back().keep_gap) {
    next_ = order_.back().first;
    order_.pop_back();
  }
  auto durable_after = [this](std::size_t i) {
    return std::any_of(order_.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                       order_.end(), [](const pending_seal& ps) {
                         return ps.state == pending_seal::durable;
                       });
  };
  while (!order_.empty() && order_.front().state != pending_seal::in_flight) {
    // A failed seal followed only by seals still in flight may yet give its
    // offsets back (should they all fail); one before a durable seal is a
    // gap for good.
    if (order_.front().state == pending_seal::failed && !order_.front().keep_gap
        && !durable_after(0))
      break;
    if (order_.front().state == pending_seal::durable)
      for (auto& a : order_.front().segments)
        advance_partition(durable_, a.base, a.frame_count, a.created_at);
    order_.pop_front();
  }
}

void partition_log::watermark_moved(offset watermark) {
  durable_.watermark = std::max(durable_.watermark, watermark);
}

// -- reads --------------------------------------------------------------------

expected<std::optional<stored_frame>> find_frame(txn& t,
                                                 const partition_record& rec,
                                                 offset end,
                                                 std::string_view txid) {
  using found = std::optional<stored_frame>;
  // No stored id is empty or longer (and LMDB refuses keys over 511 bytes).
  if (txid.empty() || txid.size() > frame_limits{}.max_id_bytes)
    return found{};
  auto at = [&](offset o, bool by_message_id) -> expected<found> {
    if (o < rec.watermark || o >= end)
      return found{};
    auto r = read_frames(t, rec.queue, rec.id, o, 1);
    if (!r)
      return std::move(r).err();
    if (r->frames.empty() || r->frames.front().off != o)
      return found{}; // a gap there
    auto& d = r->frames.front().data;
    // The message id names a generated frame whatever id it was stored
    // with (frames stored before generated ids became message ids).
    if (d.transaction_id != txid
        && !(by_message_id && d.origin == txid_origin::generated))
      return found{}; // the id names another frame
    return found{std::move(r->frames.front())};
  };
  if (auto o = message_uuid_offset(rec.uuid, txid)) {
    auto f = at(offset{*o}, true);
    if (!f || *f)
      return f;
  }
  auto d = tables::get_dedup(t, rec.queue, rec.id, txid);
  if (!d)
    return std::move(d).err();
  if (!*d)
    return found{};
  return at((*d)->off, false);
}

expected<read_result> read_frames(txn& t, queue_id q, partition_id p,
                                  offset from, std::size_t max_frames,
                                  std::size_t max_bytes) {
  auto rec = tables::require_partition(t, q, p);
  if (!rec)
    return std::move(rec).err();
  auto w = describe_partition(q, p);
  if (from.value < 0 || from > rec->next_offset)
    return make_error(ec::offset_out_of_range, w, ": offset ", from.value,
                      " out of range [0, ", rec->next_offset.value, "]");
  read_result result;
  if (from < rec->watermark) {
    result.skipped.emplace(from, rec->watermark - 1);
    from = rec->watermark;
  }
  result.next = from;
  if (from >= rec->next_offset || max_frames == 0)
    return result;
  auto cur = t.open_cursor(t.db().segments);
  if (!cur)
    return std::move(cur).err();
  auto prefix = keys::partition(q, p);
  auto start = keys::segment(q, p, from);
  // Find the segment containing `from`: the one at `from` or the one before.
  auto found = cur->seek(start);
  if (!found)
    return std::move(found).err();
  if (!*found || cur->key() != start) {
    auto moved = *found ? cur->prev() : cur->last();
    if (!moved)
      return std::move(moved).err();
    bool use_prev = false;
    if (*moved && has_prefix(cur->key(), prefix)) {
      auto h = peek_segment_header(cur->value(),
                                   {w, keys::segment_base(cur->key())});
      if (!h)
        return std::move(h).err();
      use_prev = h->end() > from;
    }
    if (!use_prev) {
      found = cur->seek(start);
      if (!found)
        return std::move(found).err();
      if (!*found)
        return result; // nothing stored at or after `from` (a gap)
    }
  }
  std::size_t bytes = 0;
  auto& out = result.frames;
  // At most what the partition holds past `from` (none when `from` is past
  // its end), and never a hostile count's worth.
  out.reserve(static_cast<std::size_t>(std::clamp<std::int64_t>(
      rec->next_offset - from, 0,
      static_cast<std::int64_t>(std::min<std::size_t>(max_frames, 1u << 16)))));
  while (out.size() < max_frames && has_prefix(cur->key(), prefix)) {
    auto before = out.size();
    auto budget = max_bytes > bytes ? max_bytes - bytes : 0;
    auto h = decode_segment(cur->value(), {w, keys::segment_base(cur->key())},
                            out, from, max_frames - out.size(), budget);
    if (!h)
      return std::move(h).err();
    for (auto i = before; i < out.size(); ++i)
      bytes += out[i].data.payload.size();
    auto available = h->end() - std::max(from, h->base);
    if (static_cast<std::int64_t>(out.size() - before) < available)
      break; // a limit stopped this segment
    auto more = cur->next();
    if (!more)
      return std::move(more).err();
    if (!*more)
      break;
  }
  if (!out.empty())
    result.next = out.back().off + 1;
  return result;
}

expected<offset> resolve_timestamp(txn& t, queue_id q, partition_id p,
                                   micros ts) {
  auto rec = tables::require_partition(t, q, p);
  if (!rec)
    return std::move(rec).err();
  auto cur = t.open_cursor(t.db().segment_time);
  if (!cur)
    return std::move(cur).err();
  auto prefix = keys::partition(q, p);
  auto found = cur->seek(keys::segment_time(q, p, ts, offset{INT64_MIN}));
  if (!found)
    return std::move(found).err();
  if (*found && has_prefix(cur->key(), prefix))
    return offset{keys::get_i64(cur->key(), 24)} - 1;
  return rec->last_offset();
}

expected<offset> first_contact(txn& t, queue_id q, partition_id p,
                               const subscription_record& rec) {
  if (rec.mode != subscription_mode::all)
    return resolve_timestamp(t, q, p, rec.timestamp);
  auto part = tables::require_partition(t, q, p);
  if (!part)
    return std::move(part).err();
  return part->watermark - 1;
}

expected<offset> resolve_timestamp_by_walk(txn& t, queue_id q, partition_id p,
                                           micros ts) {
  auto rec = tables::require_partition(t, q, p);
  if (!rec)
    return std::move(rec).err();
  std::optional<offset> hit;
  std::optional<error> failure;
  auto w = describe_partition(q, p);
  auto scanned = t.scan_prefix(
      t.db().segments, keys::partition(q, p), [&](auto key, auto value) {
        auto h = peek_segment_header(value, {w, keys::segment_base(key)});
        if (!h) {
          failure = std::move(h).err();
          return false;
        }
        if (h->created_at >= ts) {
          hit = h->base - 1;
          return false;
        }
        return true;
      });
  if (!scanned)
    return std::move(scanned).err();
  if (failure)
    return std::move(*failure);
  return hit.value_or(rec->last_offset());
}

expected<std::optional<mut::delete_segments>>
plan_retention(txn& t, queue_id q, partition_id p, const retention_rule& rule) {
  auto rec = tables::require_partition(t, q, p);
  if (!rec)
    return std::move(rec).err();
  auto w = describe_partition(q, p);
  mut::delete_segments m;
  m.queue = q;
  m.partition = p;
  std::size_t count = 0;
  std::size_t bytes = 0;
  std::optional<error> failure;
  // The new watermark is the base of the first segment kept (a later one
  // than the end of the last deleted segment when a failed write left a gap).
  auto next_retained = rec->next_offset;
  // Where the traces pass the step's budget: read once a second segment
  // is considered (a step of one segment takes its traces whatever their
  // number).
  std::optional<std::optional<offset>> traces_end;
  auto scanned = t.scan_prefix(
      t.db().segments, keys::partition(q, p), [&](auto key, auto value) {
        segment_location at{w, keys::segment_base(key)};
        if (count >= rule.max_segments
            || (count > 0 && bytes + value.size() > rule.max_bytes)) {
          next_retained = at.base;
          return false;
        }
        auto h = peek_segment_header(value, at);
        if (!h) {
          failure = std::move(h).err();
          return false;
        }
        if (count == 1 && !traces_end) {
          auto e = traces::traces_end(t, q, p, rule.max_traces);
          if (!e) {
            failure = std::move(e).err();
            return false;
          }
          traces_end = *e;
        }
        bool over_traces = count > 0 && *traces_end && h->end() > **traces_end;
        if (h->created_at >= rule.created_before || h->last() > rule.through
            || over_traces) {
          next_retained = at.base;
          return false;
        }
        auto ids = segment_client_ids(value, at);
        if (!ids) {
          failure = std::move(ids).err();
          return false;
        }
        for (auto& [id, _] : *ids)
          m.forget_ids.push_back(std::move(id));
        ++count;
        bytes += value.size();
        return true;
      });
  m.new_watermark = next_retained;
  if (!scanned)
    return std::move(scanned).err();
  if (failure)
    return std::move(*failure);
  if (count == 0)
    return std::optional<mut::delete_segments>{};
  return std::optional<mut::delete_segments>{std::move(m)};
}

} // namespace spool::storage
