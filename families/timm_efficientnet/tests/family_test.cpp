// family.toml registers the family: what it lists must be what the family's code builds.
#include <gtest/gtest.h>

#include <algorithm>

#include "families/timm_efficientnet/arch.h"
#include "graph/family_registry.h"

namespace kiln {
namespace {

TEST(TimmEfficientNetFamily, FamilyTomlListsTheArchitecturesTheCodeBuilds) {
  const Family* f = FamilyRegistry::instance().find_by_name("timm_efficientnet");
  ASSERT_NE(f, nullptr);
  auto listed = f->info().architectures, built = timm_efficientnet::supported_architectures();
  std::sort(listed.begin(), listed.end());
  std::sort(built.begin(), built.end());
  EXPECT_EQ(listed, built);
  EXPECT_EQ(f->info().task, "image_classification");
  EXPECT_EQ(f->info().recipes.size(), 5u);
  EXPECT_EQ(FamilyRegistry::instance().find_family("efficientnet_b3"), f);
}

}  // namespace
}  // namespace kiln
