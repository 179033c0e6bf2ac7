#include "core/writer/durability.hpp"

namespace spool::actors {

namespace {

class local_policy final : public durability_policy {
public:
  void committed(std::vector<storage::slot_seq>,
                 std::function<void()> durable) override {
    durable();
  }
  const char* name() const noexcept override {
    return "local";
  }
};

} // namespace

std::shared_ptr<durability_policy> local_durability() {
  static auto policy = std::make_shared<local_policy>();
  return policy;
}

} // namespace spool::actors
