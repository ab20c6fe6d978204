// The algorithm registry: lookup, option checking, creation, and the errors
// users see for unknown names, unbuilt algorithms and bad options.
#include "runtime/algorithms/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/algorithms/diloco.h"
#include "runtime/common/error.h"

namespace bagua {
namespace {

using ::testing::HasSubstr;

std::string messageOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(Registry, ListsBaguasSixAlgorithmsInTheOriginalOrderThenOurs) {
  std::vector<std::string> names;
  for (const AlgorithmInfo& info : AlgorithmRegistry::global().all()) names.push_back(info.name);
  EXPECT_THAT(names, ::testing::ElementsAre("gradient_allreduce", "bytegrad", "decentralized",
                                            "low_precision_decentralized", "qadam", "async",
                                            "local_sgd", "diloco"));
  EXPECT_THAT(AlgorithmRegistry::global().available(),
              ::testing::ElementsAre("gradient_allreduce", "bytegrad", "decentralized",
                                     "low_precision_decentralized", "qadam", "async", "local_sgd",
                                     "diloco"));
}

TEST(Registry, ResolveFillsDefaultsAndKeepsGivenValues) {
  OptionMap o = AlgorithmRegistry::global().resolve("bytegrad", {{"average", false}});
  EXPECT_FALSE(optionBool(o, "average"));
  EXPECT_TRUE(optionBool(o, "hierarchical"));
  EXPECT_FALSE(optionBool(o, "error_feedback"));
}

TEST(Registry, AnIntIsAcceptedWhereAFloatIsExpectedButNothingElseConverts) {
  AlgorithmRegistry registry;
  registry.add({"toy",
                "a test entry",
                Communicates::kGradients,
                Trigger::kTensorReady,
                {{"rate", 0.5, "a float"}, {"steps", int64_t{3}, "an int"}},
                {},
                {}});
  EXPECT_DOUBLE_EQ(optionDouble(registry.resolve("toy", {{"rate", int64_t{2}}}), "rate"), 2.0);
  EXPECT_THAT(messageOf([&] {
                registry.resolve("toy", {{"steps", 1.5}});
              }),
              HasSubstr("option 'steps' of algorithm 'toy' expects int, got float"));
  EXPECT_THAT(messageOf([&] {
                registry.resolve("toy", {{"steps", true}});
              }),
              HasSubstr("expects int, got bool"));
}

TEST(Registry, UnknownOptionNamesTheAlgorithmsOptions) {
  std::string m = messageOf([] {
    AlgorithmRegistry::global().resolve("gradient_allreduce", {{"device_ids", true}});
  });
  EXPECT_THAT(m, HasSubstr("algorithm 'gradient_allreduce' has no option 'device_ids'"));
  EXPECT_THAT(m, HasSubstr("its options: hierarchical, average"));
}

TEST(Registry, UnknownNameListsWhatIsAvailable) {
  EXPECT_THROW(AlgorithmRegistry::global().find("nope"), InvalidArgument);
  EXPECT_THAT(messageOf([] { AlgorithmRegistry::global().find("nope"); }),
              HasSubstr("unknown algorithm 'nope'; available: gradient_allreduce, bytegrad, "
                        "decentralized, low_precision_decentralized, qadam, async, local_sgd, "
                        "diloco"));
}

TEST(Registry, AnEntryWithoutAFactoryIsNotAvailableNamingWhatIs) {
  AlgorithmRegistry registry;
  registry.add(
      {"built", "", Communicates::kGradients, Trigger::kTensorReady, {}, {}, [](const OptionMap&) {
         return AlgorithmRegistry::global().create("bytegrad", {});
       }});
  registry.add({"later", "", Communicates::kWeights, Trigger::kBackground, {}, {}, {}});
  EXPECT_THROW(registry.create("later", {}), NotAvailable);
  EXPECT_THAT(messageOf([&] { registry.create("later", {}); }),
              HasSubstr("not available in this version yet; available: built"));
}

TEST(Registry, CreateBuildsTheNamedAlgorithm) {
  auto a = AlgorithmRegistry::global().create("bytegrad", {{"error_feedback", true}});
  ASSERT_NE(a, nullptr);
  EXPECT_STREQ(a->name(), "bytegrad");
  EXPECT_EQ(a->bucketAlignment(4), 4u);
  EXPECT_STREQ(AlgorithmRegistry::global().create("gradient_allreduce", {})->name(),
               "gradient_allreduce");
}

TEST(Registry, ValidationNamesTheOptionAndTheAllowedValues) {
  const auto& r = AlgorithmRegistry::global();
  EXPECT_THAT(messageOf([&] {
                r.resolve("decentralized", {{"peer_selection_mode", std::string("ring")}});
              }),
              HasSubstr("peer_selection_mode must be 'all' or 'shift_one', got 'ring'"));
  EXPECT_THAT(messageOf([&] {
                r.resolve("decentralized", {{"communication_interval", int64_t{0}}});
              }),
              HasSubstr("communication_interval must be at least 1, got 0"));
  EXPECT_NO_THROW(r.resolve("decentralized", {{"peer_selection_mode", std::string("shift_one")}}));
}

TEST(Registry, LocalSgdAndDiLoCoOptionsAreCheckedNamingTheArgument) {
  const auto& r = AlgorithmRegistry::global();
  auto message = [&](const std::string& name, const OptionMap& o) {
    return messageOf([&] { r.resolve(name, o); });
  };
  EXPECT_THAT(message("local_sgd", {{"sync_every", int64_t{0}}}),
              HasSubstr("local_sgd: sync_every must be at least 1, got 0"));
  EXPECT_THAT(message("diloco", {{"sync_every", int64_t{0}}, {"overlap", false}}),
              HasSubstr("diloco: sync_every must be at least 1, got 0"));
  EXPECT_THAT(message("diloco", {{"compression", std::string("zip")}}),
              HasSubstr("compression must be None ('none'), 'minmax_uint8' or 'fp4', got 'zip'"));
  EXPECT_THAT(message("diloco", {{"sync_every", int64_t{4}}, {"fragments", int64_t{8}}}),
              HasSubstr("fragments (8) must not exceed sync_every (4)"));
  EXPECT_THAT(message("diloco", {{"sync_every", int64_t{1}}}),
              HasSubstr("overlap needs sync_every >= 2"));
  EXPECT_THAT(message("diloco", {{"sync_every", int64_t{10}}, {"overlap_steps", int64_t{10}}}),
              HasSubstr("overlap_steps (10) must be smaller than sync_every (10)"));
  EXPECT_THAT(message("diloco", {{"overlap", false}, {"overlap_steps", int64_t{2}}}),
              HasSubstr("overlap_steps=2 needs overlap=True"));
  EXPECT_THAT(message("diloco", {{"outer_momentum", 1.0}}),
              HasSubstr("outer_momentum must be in [0, 1)"));
  EXPECT_THAT(message("diloco", {{"outer_lr", 0.0}}), HasSubstr("outer_lr must be positive"));
}

TEST(Registry, DiLoCoOverlapDelayDefaultsToTheGapBetweenFragments) {
  const auto& r = AlgorithmRegistry::global();
  auto tau = [&](int64_t h, int64_t f) {
    return diLoCoOptions(r.resolve("diloco", {{"sync_every", h}, {"fragments", f}})).overlapSteps;
  };
  EXPECT_EQ(tau(50, 3), 16);
  EXPECT_EQ(tau(50, 1), 49);
  EXPECT_EQ(tau(2, 2), 1);
  EXPECT_EQ(diLoCoOptions(r.resolve("diloco", {{"overlap", false}})).overlapSteps, 0);
  EXPECT_EQ(diLoCoOptions(r.resolve("diloco", {{"overlap_steps", int64_t{7}}})).overlapSteps, 7);
}

TEST(Registry, ADuplicateNameIsRefused) {
  AlgorithmRegistry registry;
  registry.add({"x", "", Communicates::kGradients, Trigger::kTensorReady, {}, {}, {}});
  EXPECT_THROW(registry.add({"x", "", Communicates::kWeights, Trigger::kBackground, {}, {}, {}}),
               InvalidArgument);
}

TEST(Registry, EntriesSayWhatTheyCommunicateAndWhen) {
  const auto& r = AlgorithmRegistry::global();
  EXPECT_STREQ(communicatesName(r.find("bytegrad").communicates), "gradients");
  EXPECT_STREQ(communicatesName(r.find("decentralized").communicates), "weights");
  EXPECT_STREQ(triggerName(r.find("decentralized").trigger), "before_forward");
  EXPECT_STREQ(communicatesName(r.find("qadam").communicates), "optimizer_state");
  EXPECT_STREQ(triggerName(r.find("async").trigger), "background");
}

}  // namespace
}  // namespace bagua
