// The layouts of our declarations of NCCL's net ABI (net_plugin/nccl/)
// against NCCL's own: sizes and field offsets on x86-64 Linux (LP64), as
// NCCL 2.30.7's src/include/plugin/net/net_v*.h compile (printed with
// offsetof from those headers). abi_test.cc drives each table end to end,
// but a field that moved inside a properties struct would pass there and be
// misread by NCCL; here it fails. One test per version, newest first.
#include <gtest/gtest.h>

#include <cstddef>

#include "net_plugin/nccl/net_v10.h"
#include "net_plugin/nccl/net_v11.h"
#include "net_plugin/nccl/net_v12.h"
#include "net_plugin/nccl/net_v8.h"
#include "net_plugin/nccl/net_v9.h"

namespace {

static_assert(sizeof(void*) == 8 && sizeof(size_t) == 8, "the figures below are LP64's");

TEST(AbiLayout, V12) {
  // v12 widens vProps to 8 devices and appends railId/planeId.
  EXPECT_EQ(NCCL_NET_MAX_DEVS_PER_NIC_V12, 8);
  EXPECT_EQ(NCCL_NET_ID_UNDEF, -1);
  EXPECT_EQ(sizeof(ncclNetProperties_v12_t), 128u);
  EXPECT_EQ(offsetof(ncclNetProperties_v12_t, name), 0u);
  EXPECT_EQ(offsetof(ncclNetProperties_v12_t, pciPath), 8u);
  EXPECT_EQ(offsetof(ncclNetProperties_v12_t, guid), 16u);
  EXPECT_EQ(offsetof(ncclNetProperties_v12_t, ptrSupport), 24u);
  EXPECT_EQ(offsetof(ncclNetProperties_v12_t, regIsGlobal), 28u);
  EXPECT_EQ(offsetof(ncclNetProperties_v12_t, forceFlush), 32u);
  EXPECT_EQ(offsetof(ncclNetProperties_v12_t, speed), 36u);
  EXPECT_EQ(offsetof(ncclNetProperties_v12_t, port), 40u);
  EXPECT_EQ(offsetof(ncclNetProperties_v12_t, latency), 44u);
  EXPECT_EQ(offsetof(ncclNetProperties_v12_t, maxComms), 48u);
  EXPECT_EQ(offsetof(ncclNetProperties_v12_t, maxRecvs), 52u);
  EXPECT_EQ(offsetof(ncclNetProperties_v12_t, netDeviceType), 56u);
  EXPECT_EQ(offsetof(ncclNetProperties_v12_t, netDeviceVersion), 60u);
  EXPECT_EQ(offsetof(ncclNetProperties_v12_t, vProps), 64u);
  EXPECT_EQ(offsetof(ncclNetProperties_v12_t, maxP2pBytes), 104u);
  EXPECT_EQ(offsetof(ncclNetProperties_v12_t, maxCollBytes), 112u);
  EXPECT_EQ(offsetof(ncclNetProperties_v12_t, maxMultiRequestSize), 120u);
  EXPECT_EQ(offsetof(ncclNetProperties_v12_t, railId), 124u);
  EXPECT_EQ(offsetof(ncclNetProperties_v12_t, planeId), 126u);
  EXPECT_EQ(sizeof(ncclNetVDeviceProps_v12_t), 36u);
  EXPECT_EQ(sizeof(ncclNetCommConfig_v12_t), 4u);
  EXPECT_EQ(sizeof(ncclNetAttr_v12_t), 44u);
  EXPECT_EQ(offsetof(ncclNetAttr_v12_t, recvCommAttr), 16u);
  EXPECT_EQ(offsetof(ncclNetAttr_v12_t, op), 32u);
  EXPECT_EQ(offsetof(ncclNetAttr_v12_t, proto), 40u);
  EXPECT_EQ(offsetof(ncclNetAttr_v12_t, sendCommAttr), 0u);
  EXPECT_EQ(sizeof(ncclNet_v12_t), 176u);
  EXPECT_EQ(offsetof(ncclNet_v12_t, getProperties), 24u);
  EXPECT_EQ(offsetof(ncclNet_v12_t, isend), 80u);
  EXPECT_EQ(offsetof(ncclNet_v12_t, test), 104u);
  EXPECT_EQ(offsetof(ncclNet_v12_t, finalize), 160u);
  EXPECT_EQ(offsetof(ncclNet_v12_t, setNetAttr), 168u);
}

TEST(AbiLayout, V11) {
  EXPECT_EQ(sizeof(ncclNetProperties_v11_t), 112u);
  EXPECT_EQ(offsetof(ncclNetProperties_v11_t, name), 0u);
  EXPECT_EQ(offsetof(ncclNetProperties_v11_t, pciPath), 8u);
  EXPECT_EQ(offsetof(ncclNetProperties_v11_t, guid), 16u);
  EXPECT_EQ(offsetof(ncclNetProperties_v11_t, ptrSupport), 24u);
  EXPECT_EQ(offsetof(ncclNetProperties_v11_t, regIsGlobal), 28u);
  EXPECT_EQ(offsetof(ncclNetProperties_v11_t, forceFlush), 32u);
  EXPECT_EQ(offsetof(ncclNetProperties_v11_t, speed), 36u);
  EXPECT_EQ(offsetof(ncclNetProperties_v11_t, port), 40u);
  EXPECT_EQ(offsetof(ncclNetProperties_v11_t, latency), 44u);
  EXPECT_EQ(offsetof(ncclNetProperties_v11_t, maxComms), 48u);
  EXPECT_EQ(offsetof(ncclNetProperties_v11_t, maxRecvs), 52u);
  EXPECT_EQ(offsetof(ncclNetProperties_v11_t, netDeviceType), 56u);
  EXPECT_EQ(offsetof(ncclNetProperties_v11_t, netDeviceVersion), 60u);
  EXPECT_EQ(offsetof(ncclNetProperties_v11_t, vProps), 64u);
  EXPECT_EQ(offsetof(ncclNetProperties_v11_t, maxP2pBytes), 88u);
  EXPECT_EQ(offsetof(ncclNetProperties_v11_t, maxCollBytes), 96u);
  EXPECT_EQ(offsetof(ncclNetProperties_v11_t, maxMultiRequestSize), 104u);
  EXPECT_EQ(sizeof(ncclNet_v11_t), 176u);
  EXPECT_EQ(offsetof(ncclNet_v11_t, finalize), 160u);
  EXPECT_EQ(offsetof(ncclNet_v11_t, setNetAttr), 168u);
}

TEST(AbiLayout, V10AndV9) {
  EXPECT_EQ(sizeof(ncclNetProperties_v10_t), 104u);
  EXPECT_EQ(offsetof(ncclNetProperties_v10_t, forceFlush), 32u);
  EXPECT_EQ(offsetof(ncclNetProperties_v10_t, vProps), 64u);
  EXPECT_EQ(offsetof(ncclNetProperties_v10_t, maxCollBytes), 96u);
  EXPECT_EQ(sizeof(ncclNetProperties_v9_t), 104u);
  EXPECT_EQ(offsetof(ncclNetProperties_v9_t, forceFlush), 32u);
  EXPECT_EQ(offsetof(ncclNetProperties_v9_t, vProps), 64u);
  EXPECT_EQ(offsetof(ncclNetProperties_v9_t, maxCollBytes), 96u);
  EXPECT_EQ(sizeof(ncclNet_v10_t), 160u);
  EXPECT_EQ(offsetof(ncclNet_v10_t, makeVDevice), 152u);
  EXPECT_EQ(sizeof(ncclNet_v9_t), 160u);
  EXPECT_EQ(offsetof(ncclNet_v9_t, makeVDevice), 152u);
}

TEST(AbiLayout, V8) {
  EXPECT_EQ(sizeof(ncclNetProperties_v8_t), 64u);
  EXPECT_EQ(offsetof(ncclNetProperties_v8_t, regIsGlobal), 28u);
  EXPECT_EQ(offsetof(ncclNetProperties_v8_t, speed), 32u);
  EXPECT_EQ(offsetof(ncclNetProperties_v8_t, netDeviceVersion), 56u);
  EXPECT_EQ(sizeof(ncclNet_v8_t), 152u);
  EXPECT_EQ(offsetof(ncclNet_v8_t, irecvConsumed), 144u);
}

}  // namespace
