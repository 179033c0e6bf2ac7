#pragma once

/// Fail points (docs/cluster.md, "Fail points"): named steps where a test
/// makes spoold kill itself with SIGKILL, so that a crash lands exactly
/// there and not only at random (etcd's gofail, FreeBSD's fail(9)). A point
/// does nothing unless `SPOOL_FAIL_POINTS` named it when spoold started, and
/// a named point does nothing until armed: SIGUSR2 arms every named point.
/// Unarmed, a hit is one relaxed atomic load.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spool::fail_points {

/// A leader's write is durable on its own disk and not yet shipped, so not
/// on a quorum (the writer's `committed` hook, before the core hears it).
inline constexpr std::string_view leader_synced_before_quorum
    = "leader-synced-before-quorum";
/// A replica has persisted a fence's epoch and not yet answered it.
inline constexpr std::string_view fenced_before_answer = "fenced-before-answer";

/// Reads `SPOOL_FAIL_POINTS`' value: `name[@slot]`, comma-separated (no
/// slot: every slot). The error says what it cannot read; nothing is
/// named then. Call once, before any thread hits a point.
std::optional<std::string> configure(std::string_view spec);
/// Whether `configure` named any point.
bool named() noexcept;
/// Arms every named point and writes `fail points armed` to stderr.
/// Async-signal-safe (SIGUSR2's handler).
void arm() noexcept;
/// Kills this process with SIGKILL if `point` is armed for `slot`, after
/// one line on stderr that says which point it was.
void hit(std::string_view point, std::uint32_t slot) noexcept;

} // namespace spool::fail_points
