// What the model makes of a process's identity (model/process_identity.h):
// the service name's order of sources, container id prefixes, cgroup ancestry.
#include "model/process_identity.h"

#include <gtest/gtest.h>

#include <string>

namespace arcprof::model {
namespace {

const std::string kId2 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

TEST(ProcessIdentity, ServiceNameOrder) {
  EXPECT_EQ(ServiceName("nginx.service", "otel", kId2, "exe"), "nginx");
  EXPECT_EQ(ServiceName("getty@tty1.service", "", "", "agetty"), "getty@tty1");
  EXPECT_EQ(ServiceName("", "checkout", kId2, "exe"), "checkout");
  EXPECT_EQ(ServiceName("", "", kId2, "exe"), "0123456789ab");
  EXPECT_EQ(ServiceName("", "", "web1", "exe"), "web1");
  EXPECT_EQ(ServiceName("", "", "", "python3"), "python3");
  EXPECT_EQ(ServiceName(".service", "", "", "x"), "x");
  // Escaped and bounded whatever it is given.
  EXPECT_EQ(ServiceName("", "", "", "\x9b" "31m"), "\\x9b31m");
  EXPECT_EQ(ServiceName("", std::string(1000, 'a'), "", ""), std::string(256, 'a'));
  EXPECT_EQ(ShortContainerId(kId2), "0123456789ab");
  EXPECT_EQ(ShortContainerId("web1"), "web1");
}

TEST(ProcessIdentity, Matching) {
  ProcessIdentity id;
  id.container_id = kId2;
  id.cgroup = "/system.slice/docker-" + kId2 + ".scope";
  EXPECT_TRUE(ContainerIdMatches(id, "0123"));
  EXPECT_TRUE(ContainerIdMatches(id, kId2));
  EXPECT_FALSE(ContainerIdMatches(id, ""));
  EXPECT_FALSE(ContainerIdMatches(id, "1234"));
  EXPECT_TRUE(CgroupContains("/system.slice", id.cgroup));
  EXPECT_TRUE(CgroupContains("/system.slice/", id.cgroup));
  EXPECT_TRUE(CgroupContains(id.cgroup, id.cgroup));
  EXPECT_FALSE(CgroupContains("/system.slic", id.cgroup));
  EXPECT_TRUE(CgroupContains("/", id.cgroup));
  EXPECT_FALSE(CgroupContains("/user.slice", id.cgroup));
  EXPECT_FALSE(CgroupContains("/system.slice", ""));
}

}  // namespace
}  // namespace arcprof::model
