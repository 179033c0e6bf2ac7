#pragma once

/// The JSON shapes several routes share: a message as a pop, a browse or a
/// DLQ listing writes it (Queen's fields and Spool's additions), a queue's
/// options, and the message id.

#include <string>

#include "node/api.hpp"
#include "protocol/json/write.hpp"

namespace spool::api {

/// A message's id: a UUID (version 8, RFC 9562) made of a hash of its
/// partition's uuid and its offset, so that a duplicate push answers its
/// original's id and every door names a message the same way.
std::string message_id(const std::string& partition_id, std::int64_t offset);

/// The message's payload under `key`: its JSON text (none: null), or for a
/// binary payload its base64 and `encoding_key: "base64"`.
void write_payload(json::writer& w, std::string_view key,
                   const node::message& m, std::string_view encoding_key);

/// A message's fields (the caller opens and closes the object).
void write_message_fields(json::writer& w, const node::message& m);

/// A queue's id, name, namespace, task and createdAt (the caller opens and
/// closes the object).
void write_queue_names(json::writer& w, const node::queue_info& q);

/// Frames retained in a partition.
std::int64_t retained(const node::partition_info& p);

/// Every option of a queue as stored (`configure`'s echo, queue detail).
void write_options(json::writer& w, const queue_options& o);

} // namespace spool::api
