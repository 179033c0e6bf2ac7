// The gateway's calls that manage rather than move messages: seek, the
// subscription update, queues, consumer groups, the DLQ, transactions.

#include "gateway/impl.hpp"

namespace spool {

using namespace gateway_detail;

void gateway::seek(node::seek_request req, done<node::seek_reply> k) {
  actors::seek_request s;
  s.group = std::move(req.group);
  s.partition = std::move(req.partition);
  s.target = req.target;
  s.dry_run = req.dry_run;
  impl_->ask<actors::seek_reply>(
      std::move(k),
      [](actors::seek_reply& r, const clocks&) {
        return or_failure(r, [](actors::seek_reply& r) {
          node::seek_reply out;
          out.partitions_updated = r.partitions_updated;
          for (auto& p : r.positions)
            out.positions.push_back(
                {p.partition,
                 p.before ? std::optional<std::int64_t>{p.before->value}
                          : std::nullopt,
                 p.after.value});
          return out;
        });
      },
      actors::seek_atom::value, std::move(req.queue), std::move(s));
}

void gateway::update_subscription(node::subscription_request req,
                                  done<node::subscription_reply> k) {
  impl_->ask<actors::sub_update_reply>(
      std::move(k),
      [](actors::sub_update_reply& r, const clocks&) {
        return or_failure(r, [](actors::sub_update_reply& r) {
          return node::subscription_reply{r.rows_updated};
        });
      },
      actors::sub_update_atom::value, std::move(req.group), req.timestamp);
}

void gateway::configure(node::configure_request req,
                        done<node::configure_reply> k) {
  actors::configure_request c;
  c.queue = std::move(req.queue);
  c.name_space = std::move(req.name_space);
  c.task = std::move(req.task);
  c.options = req.options;
  impl_->ask<actors::configure_reply>(
      std::move(k),
      [](actors::configure_reply& r, const clocks&) {
        return or_failure(r, [](actors::configure_reply& r) {
          return node::configure_reply{from_record(r.queue),
                                       r.default_partition_uuid, r.created};
        });
      },
      actors::configure_atom::value, std::move(c));
}

void gateway::queues(std::optional<std::string> name,
                     done<std::vector<node::queue_info>> k) {
  impl_->ask<actors::queues_reply>(
      std::move(k),
      [](actors::queues_reply& r, const clocks&) {
        return or_failure(r, [](actors::queues_reply& r) {
          std::vector<node::queue_info> out;
          for (auto& q : r.queues) {
            auto info = from_record(q.record);
            for (auto& p : q.partitions)
              info.partitions.push_back({p.name, p.uuid, p.last_offset().value,
                                         p.watermark.value, p.created_at});
            out.push_back(std::move(info));
          }
          return out;
        });
      },
      actors::info_atom::value, std::move(name));
}

void gateway::delete_queue(const std::string& name, done<bool> k) {
  impl_->ask<actors::delete_queue_reply>(
      std::move(k),
      [](actors::delete_queue_reply& r, const clocks&) {
        return or_failure(
            r, [](actors::delete_queue_reply& r) { return r.existed; });
      },
      actors::delete_atom::value, name);
}

void gateway::purge(node::purge_request req, done<std::size_t> k) {
  actors::purge_request p;
  p.partition = std::move(req.partition);
  if (req.below)
    p.below = offset{*req.below};
  impl_->ask<actors::purge_reply>(
      std::move(k),
      [](actors::purge_reply& r, const clocks&) {
        return or_failure(r,
                          [](actors::purge_reply& r) { return r.partitions; });
      },
      actors::purge_atom::value, std::move(req.queue), std::move(p));
}

void gateway::browse(node::browse_request req, done<node::browse_reply> k) {
  actors::browse_request b;
  b.partition = req.partition;
  b.from = offset{req.from};
  b.max_frames = req.limit;
  b.max_bytes = req.max_bytes.value_or(SIZE_MAX);
  // (Captured before the queue's name is moved into the request.)
  auto convert = [queue = req.queue, partition = req.partition,
                  keys = impl_->encryption_keys](
                     actors::browse_reply& r,
                     const clocks&) -> expected<node::browse_reply> {
    if (r.failure)
      return *r.failure;
    node::browse_reply out;
    for (auto& f : r.frames) {
      auto m = from_stored(f, keys.get(), queue, partition, r.partition_uuid,
                           unreadable_is::listed);
      if (!m)
        return m.err();
      out.messages.push_back(std::move(*m));
    }
    out.next = r.next.value;
    if (r.skipped)
      out.skipped = node::skipped_range{partition, r.skipped->first.value,
                                        r.skipped->last.value};
    return out;
  };
  impl_->ask<actors::browse_reply>(std::move(k), std::move(convert),
                                   actors::browse_atom::value,
                                   std::move(req.queue), std::move(b));
}

void gateway::find(node::find_request req, done<node::message> k) {
  impl_->ask<actors::find_reply>(
      std::move(k),
      [keys = impl_->encryption_keys](
          actors::find_reply& r, const clocks&) -> expected<node::message> {
        if (r.failure)
          return *r.failure;
        if (!r.frame)
          return make_error(errc::not_found, "Message not found");
        return from_stored(*r.frame, keys.get(), r.queue, r.partition,
                           r.partition_uuid, unreadable_is::listed);
      },
      actors::browse_atom::value,
      actors::find_request{std::move(req.partition_id),
                           std::move(req.transaction_id)});
}

void gateway::storage_usage(done<node::storage_usage> k) {
  impl_->ask<actors::usage_reply>(
      std::move(k),
      [](actors::usage_reply& r, const clocks&) {
        return or_failure(r, [](actors::usage_reply& r) {
          return node::storage_usage{r.usage.map_bytes, r.usage.used_bytes,
                                     r.usage.max_map_bytes};
        });
      },
      actors::usage_atom::value);
}

void gateway::groups(node::groups_request req,
                     done<std::vector<node::cursor_view>> k) {
  impl_->ask<actors::groups_reply>(
      std::move(k),
      [](actors::groups_reply& r, const clocks&) {
        return or_failure(r, [](actors::groups_reply& r) {
          std::vector<node::cursor_view> out;
          for (auto& c : r.cursors)
            out.push_back(from_broker(c));
          return out;
        });
      },
      actors::groups_atom::value,
      actors::groups_request{std::move(req.group), std::move(req.queue),
                             std::move(req.partition)});
}

void gateway::delete_group(node::delete_group_request req,
                           done<node::delete_group_reply> k) {
  actors::delete_group_request d;
  d.group = std::move(req.group);
  d.queue = std::move(req.queue);
  d.delete_metadata = req.delete_metadata;
  impl_->ask<actors::delete_group_reply>(
      std::move(k),
      [](actors::delete_group_reply& r, const clocks&) {
        return or_failure(r, [](actors::delete_group_reply& r) {
          return node::delete_group_reply{r.deleted_partitions,
                                          r.metadata_deleted};
        });
      },
      actors::delete_atom::value, std::move(d));
}

namespace {

expected<node::dlq_count> count_of(actors::dlq_count_reply& r, const clocks&) {
  return or_failure(r, [](actors::dlq_count_reply& r) {
    return node::dlq_count{r.count, r.remaining};
  });
}

} // namespace

void gateway::dlq_list(dlq_query q, done<node::dlq_page> k) {
  impl_->ask<actors::dlq_list_reply>(
      std::move(k),
      [keys = impl_->encryption_keys](actors::dlq_list_reply& r, const clocks&)
          -> expected<node::dlq_page> {
        if (r.failure)
          return *r.failure;
        node::dlq_page out;
        out.total = r.page.total;
        for (auto& item : r.page.items) {
          auto m = from_broker(item, keys.get());
          if (!m)
            return m.err();
          out.messages.push_back(std::move(*m));
        }
        return out;
      },
      actors::dlq_list_atom::value, std::move(q));
}

void gateway::dlq_requeue(dlq_filter f, done<node::dlq_count> k) {
  impl_->ask<actors::dlq_count_reply>(
      std::move(k), count_of, actors::requeue_atom::value, std::move(f));
}

void gateway::dlq_delete(dlq_filter f, done<node::dlq_count> k) {
  impl_->ask<actors::dlq_count_reply>(
      std::move(k), count_of, actors::dlq_del_atom::value, std::move(f));
}

void gateway::transaction(node::txn_request req, done<node::txn_reply> k) {
  auto ids = std::make_shared<std::vector<item_ids>>();
  auto t = to_broker(req, *ids);
  if (!t)
    return k(t.err());
  impl_->ask<actors::txn_reply>(
      std::move(k),
      [ids](actors::txn_reply& r, const clocks&) {
        return or_failure(r, [&](actors::txn_reply& r) {
          return from_broker(r.result, *ids);
        });
      },
      actors::txn_atom::value, std::move(*t));
}

void gateway::set_promoter(promoter p) {
  impl_->promote = std::move(p);
}

void gateway::set_slot_reporter(slot_reporter r) {
  impl_->slot_report = std::move(r);
}

void gateway::set_slot_server(slot_server s) {
  impl_->served = std::move(s);
}

std::optional<std::vector<slot_t>> gateway::served_slots() const {
  if (!impl_->served)
    return std::nullopt;
  return impl_->served();
}

void gateway::slot_replicas(done<std::vector<node::slot_replica>> k) {
  if (!impl_->slot_report)
    return k(std::vector<node::slot_replica>{});
  impl_->slot_report(std::move(k));
}

void gateway::promote(node::promote_request req, done<node::promote_reply> k) {
  if (!impl_->promote)
    return k(make_error(errc::invalid_argument,
                        "promote: this node runs alone (spoold without "
                        "--peers): it has no replicas to elect from"));
  if (req.slot.has_value() == req.all)
    return k(make_error(errc::invalid_argument,
                        "promote: name one slot (slot) or every slot (all), "
                        "not both and not neither"));
  impl_->promote(std::move(req), std::move(k));
}

} // namespace spool
