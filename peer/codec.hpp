#pragma once

/// The peer link's frames (docs/cluster.md, "Peer links"): what replicas
/// send each other, framed as the client protocol is (a 4-byte big-endian
/// length, then one msgpack value), each body a msgpack array whose first
/// element says what it is. Compact arrays, not maps: the link is Spool's
/// own, and its version is agreed in the hello. Decoding checks every
/// element's type and every count against the bytes there are, and says
/// which element was wrong.

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "cluster/messages.hpp"
#include "vocab/expected.hpp"
#include "vocab/slot.hpp"

namespace spool::peer {

/// The peer protocol this build speaks; a hello with another is refused.
/// Version 2: the hello carries the node's client addresses. Version 3:
/// snapshots go in pieces (`snapshot_rep`).
inline constexpr std::uint32_t protocol_version = 3;

/// The first frame each side sends: its protocol version, its node, the
/// cluster it belongs to, a fresh random nonce for the other side's proof,
/// and where its clients reach it (host:port of its HTTP and msgpack
/// doors, what a `not_leader` refusal names). A hello of another version
/// decodes as far as its first four elements, so it is refused by version.
struct hello {
  std::uint32_t version = protocol_version;
  cluster::node_id node{};
  std::string cluster_id;
  std::string nonce;
  std::string http;
  std::string msgpack;
  friend bool operator==(const hello&, const hello&) = default;
};

/// The answer to a hello: HMAC-SHA256 of the cluster secret over both
/// nonces, the prover's node and its client addresses (handshake.hpp). The
/// secret never crosses the wire.
struct proof {
  std::string mac;
  friend bool operator==(const proof&, const proof&) = default;
};

/// One replication message of one slot.
using cluster::slot_message;

using frame = std::variant<hello, proof, slot_message>;

/// A frame's body (what follows its length).
std::string encode(const frame& f);
/// The whole frame: its length, then its body.
std::string encode_frame(const frame& f);
/// A body back; `bad_request` saying what is wrong when it is not one.
expected<frame> decode(std::string_view body);

} // namespace spool::peer
