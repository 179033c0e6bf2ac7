#pragma once

/// Reading the msgpack ops whose HTTP form lives in the path and the query
/// (pop, browse, seek's names, the listings): the request map's fields,
/// typed, into the node API's request, with api.md's error texts. The ops
/// whose HTTP form is a body read it by the body's rules
/// (protocol/api/requests.hpp, the `mp::object` overloads). Pure functions
/// of the request map: the fuzz target calls every one of them.

#include <cstdint>
#include <optional>
#include <string>

#include "node/api.hpp"
#include "protocol/msgpack/read.hpp"

namespace spool::mp {

/// `hello`: the protocol version the client speaks (required) and its
/// token (docs/security.md; a JWT without `Bearer `).
struct hello_request {
  std::uint64_t version = 0;
  std::optional<std::string> token;
};
expected<hello_request> read_hello(const object& req);

/// `pop`: `queue` (and `partition`), or `namespace` (and `task`); `batch`,
/// `partitions`, `wait`, `timeout` (ms), `consumerGroup`, `autoAck`,
/// `subscriptionMode`, `subscriptionFrom`, `maxBytes`.
expected<node::pop_request> read_pop(const object& req);
/// `pop`'s `compact` (false when absent): the answer's shape
/// (api::write_pop_compact).
expected<bool> read_compact(const object& req);

/// `extend`: `leaseId`, `seconds` (60).
expected<node::extend_request> read_extend(const object& req);

/// `seek`: `consumerGroup`, `queue`, `partition`?, `dryRun`?, and the
/// target (`toEnd`, `toStart`, `timestamp`, `offset`, `shiftBy`).
expected<node::seek_request> read_seek(const object& req);

/// `subscription`: `consumerGroup`, `subscriptionTimestamp`.
expected<node::subscription_request> read_subscription(const object& req);

/// `queues`, `delete_queue`: `queue` (optional for the listing).
expected<std::optional<std::string>> read_queue_name(const object& req,
                                                     bool required);

/// `purge`: `queue`, `partition`?, `below`?.
expected<node::purge_request> read_purge(const object& req);

/// `promote`: `slot` or `all`, `to`? (the gateway checks the choice).
expected<node::promote_request> read_promote(const object& req);

/// `browse`: `queue`, `partition` (Default), `fromOffset`, `limit`
/// (1..10000, 100), `maxBytes`.
expected<node::browse_request> read_browse(const object& req);

/// `groups`: `consumerGroup`?, `queue`?, `partition`? (with `queue`).
expected<node::groups_request> read_groups(const object& req);

/// `delete_group`: `consumerGroup`, `queue`?, `deleteMetadata` (true).
expected<node::delete_group_request> read_delete_group(const object& req);

/// `dlq`: the filters, `limit` (1..10000, 100), `offset`, `after`.
expected<dlq_query> read_dlq_query(const object& req);

/// `dlq_delete`: `ids`, or filters with at least `queue`.
expected<dlq_filter> read_dlq_delete(const object& req);

} // namespace spool::mp
