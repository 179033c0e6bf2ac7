#pragma once

// Claim in the append (docs/operations.md, "Long poll"): the frames a parked
// pop is staged on, from a push that is sealed but not stored yet.

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "storage/log.hpp"

namespace spool::core {

/// The frames of a claim are copied before sealing, at most this many per
/// partition: a pop delivers a prefix of them (the rest by its next pop),
/// and a large push costs no more memory than that.
inline constexpr std::size_t claim_frames = 1000;

/// The first `claim_frames` frames of each partition's (sealing moves the
/// frames themselves away).
std::vector<std::vector<storage::frame>>
claim_copies(const std::vector<std::vector<storage::frame>>& frames);

/// The sealed frames as a read will return them once stored, at most
/// `batch`: `copies[j]` is the frame of `sealed.results[j]`; a duplicate is
/// not appended, and a generated transactionId is the message id (of the
/// partition's `uuid`), as the segment stores it.
std::vector<storage::stored_frame>
sealed_frames(const storage::sealed_append& sealed,
              std::span<const storage::frame> copies, std::size_t batch,
              const std::string& uuid);

} // namespace spool::core
