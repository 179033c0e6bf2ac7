#pragma once

/// The shapes several answers share: a message as a pop, a browse or a
/// DLQ listing writes it (Queen's fields and Spool's additions), a queue's
/// options, and the message id. Each writes through `W`, a `json::writer`
/// (HTTP) or an `mp::writer` (msgpack): one shape, two encodings.

#include <string>

#include "node/api.hpp"
#include "protocol/json/write.hpp"
#include "wire/writer.hpp"

namespace spool::api {

/// A message's id: a UUID (version 8, RFC 9562) made of a hash of its
/// partition's uuid and its offset, so that a duplicate push answers its
/// original's id and every door names a message the same way.
std::string message_id(const std::string& partition_id, std::int64_t offset);

/// The message's payload under `key`: its JSON text (none: null), or for a
/// binary payload its base64 and `encoding_key: "base64"`; for a listed
/// payload that cannot be decrypted, null and why under `error_key`.
void write_payload(json::writer& w, std::string_view key,
                   const node::message& m, std::string_view encoding_key,
                   std::string_view error_key = "dataError");
/// msgpack: the payload's bytes as bin under `key`, and `encoding_key`:
/// "binary", or "json" for JSON text (a JSON payload, `null` when none).
void write_payload(mp::writer& w, std::string_view key, const node::message& m,
                   std::string_view encoding_key,
                   std::string_view error_key = "dataError");

/// A message of a compact pop (docs/protocol.md): its own fields only,
/// `createdAt` as µs since the epoch, empty ones left out.
void write_message_compact(mp::writer& w, const node::message& m);

/// A message's fields (the caller opens and closes the object). A
/// requeued dead letter says `requeued` and the id of the entry it came
/// from as `dlqId`, unless `requeue_id` is false (a DLQ listing, whose own
/// `dlqId` is the entry's).
template <class W>
void write_message_fields(W& w, const node::message& m, bool requeue_id = true);

/// A queue's id, name, namespace, task and createdAt (the caller opens and
/// closes the object).
template <class W>
void write_queue_names(W& w, const node::queue_info& q);

/// The bytes a pop's answer takes, about: its payloads (base64 in JSON
/// when binary), their strings, and `fields` bytes of names and numbers per
/// message. The encoders reserve it, so a big answer is built in place
/// rather than grown by doubling (up to twice its size while it moves).
std::size_t pop_answer_hint(const node::pop_reply& r, bool json,
                            std::size_t fields);

/// Frames retained in a partition.
std::int64_t retained(const node::partition_info& p);

/// Every option of a queue as stored (`configure`'s echo, queue detail).
template <class W>
void write_options(W& w, const queue_options& o);

} // namespace spool::api
