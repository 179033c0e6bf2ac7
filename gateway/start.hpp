#pragma once

/// Makes the gateway over a running node (spoold and the tests; the front
/// doors include only gateway/gateway.hpp).

#include <caf/fwd.hpp>

#include <functional>
#include <memory>

#include "actors/interfaces.hpp"
#include "actors/metrics.hpp"
#include "gateway/gateway.hpp"

namespace spool {

/// `wall` is the node's wall clock in µs (lease expiries are given in it);
/// `metrics`, the node's counters (`gateway::counters`), if it keeps them.
std::unique_ptr<gateway>
make_gateway(caf::actor_system& sys, actors::node_api node,
             std::function<micros()> wall,
             std::shared_ptr<const actors::node_metrics> metrics = nullptr);

} // namespace spool
