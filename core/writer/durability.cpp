#include "core/writer/durability.hpp"

namespace spool::actors {

namespace {

class local_policy final : public durability_policy {
public:
  void committed(std::vector<durable_mark>, durable_fn done) override {
    done({});
  }
  const char* name() const noexcept override {
    return "local";
  }
};

} // namespace

std::vector<durable_mark> marks_of(const commit_report& report) {
  auto marks = report.marks();
  std::vector<durable_mark> out;
  out.reserve(marks.size());
  for (std::size_t i = 0; i < marks.size(); ++i)
    out.push_back({marks[i], i < report.epochs.size() ? report.epochs[i] : 0});
  return out;
}

std::shared_ptr<durability_policy> local_durability() {
  static auto policy = std::make_shared<local_policy>();
  return policy;
}

} // namespace spool::actors
