#pragma once

/// Makes the gateway over a running node (spoold and the tests; the front
/// doors include only gateway/gateway.hpp).

#include <caf/fwd.hpp>

#include <functional>
#include <memory>

#include "actors/interfaces.hpp"
#include "actors/metrics.hpp"
#include "cipher/keyring.hpp"
#include "gateway/gateway.hpp"

namespace spool {

/// `wall` is the node's wall clock in µs (lease expiries are given in it);
/// `metrics`, the node's counters (`gateway::counters`), if it keeps them;
/// `encryption_keys`, what decrypts payloads stored encrypted at rest (the
/// node's `node_context::encryption_keys`).
std::unique_ptr<gateway>
make_gateway(caf::actor_system& sys, actors::node_api node,
             std::function<micros()> wall,
             std::shared_ptr<const actors::node_metrics> metrics = nullptr,
             std::shared_ptr<const cipher::keyring> encryption_keys = nullptr);

} // namespace spool
