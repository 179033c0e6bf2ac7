#pragma once

/// The msgpack door's operations (api.md, last section; docs/protocol.md):
/// each op's request read by the same rules as its HTTP route, the gateway
/// called, the answer written in the same shape (protocol/api/shapes.hpp)
/// as the reply map `{id, ok: true, …}`, or `{id, ok: false, error: {code,
/// message}}`. `hello` comes first on a connection.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "auth/roles.hpp"

#include "protocol/api/service.hpp"
#include "protocol/tcp/server.hpp"

namespace spool::mp {

/// The protocol version this server speaks (docs/protocol.md,
/// "Versioning").
inline constexpr std::uint64_t protocol_version = 1;

/// What `hello` tells a client of the door's limits.
struct door_info {
  std::size_t max_frame_bytes = std::size_t{64} << 20;
  std::size_t max_in_flight = 1024;
};

/// The msgpack server's handler over the routes' service (its gateway,
/// readiness and counters).
handler make_handler(api::service& svc, door_info info);

/// The ops this server serves, in `hello`'s order.
const std::vector<std::string_view>& op_names();

/// The role an op needs when tokens are on; none for an unknown op (the
/// role tests walk every op of `op_names`).
std::optional<auth::access> op_level(std::string_view op);

} // namespace spool::mp
