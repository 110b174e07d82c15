// The cgroup and environment parsers (symbolize/cgroup_parse.h) over the
// cgroup path shapes of docker, containerd, cri-o, podman, LXC,
// systemd-nspawn and kubernetes (systemd and cgroupfs drivers), cgroup v1 and
// v2 files, and hostile input.
#include "spaces/cgroup_parse.h"

#include <gtest/gtest.h>

#include <string>

namespace arcprof::procfs {
namespace {

const std::string kId(64, 'a');
const std::string kId2 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const std::string kUid = "12345678-90ab-cdef-1234-567890abcdef";
const std::string kUidUnderscore = "12345678_90ab_cdef_1234_567890abcdef";

struct Shape {
  std::string path;
  std::string container_id;
  std::string runtime;
  std::string pod_uid;
  std::string qos;
  std::string unit;
};

TEST(CgroupParse, PathShapes) {
  const Shape shapes[] = {
      {"/system.slice/docker-" + kId + ".scope", kId, "docker", "", "", ""},
      {"/docker/" + kId2, kId2, "docker", "", "", ""},
      {"/docker/" + kId2 + "/init.scope", kId2, "docker", "", "", ""},
      {"/system.slice/containerd.service/kubepods-burstable-pod" + kUidUnderscore + ".slice:cri-containerd:" + kId,
       kId, "containerd", kUid, "burstable", ""},
      {"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kUidUnderscore +
           ".slice/cri-containerd-" + kId + ".scope",
       kId, "containerd", kUid, "burstable", ""},
      {"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + kUidUnderscore + ".slice/crio-" +
           kId2 + ".scope",
       kId2, "cri-o", kUid, "besteffort", ""},
      {"/kubepods.slice/kubepods-pod" + kUidUnderscore + ".slice/cri-containerd-" + kId + ".scope", kId,
       "containerd", kUid, "guaranteed", ""},
      {"/kubepods/burstable/pod" + kUid + "/" + kId2, kId2, "kubernetes", kUid, "burstable", ""},
      {"/kubepods/pod" + kUid + "/" + kId2, kId2, "kubernetes", kUid, "guaranteed", ""},
      {"/kubepods/besteffort/pod" + kUid, "", "", kUid, "besteffort", ""},
      {"/kubepods.slice/kubepods-burstable.slice", "", "", "", "", ""},
      {"/machine.slice/libpod-" + kId + ".scope", kId, "podman", "", "", ""},
      {"/machine.slice/libpod-" + kId + ".scope/container", kId, "podman", "", "", ""},
      {"/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + kId2 + ".scope", kId2, "podman", "",
       "", ""},
      {"/machine.slice/libpod-conmon-" + kId + ".scope", "", "", "", "", ""},
      {"/libpod_parent/libpod-" + kId, kId, "podman", "", "", ""},
      {"/lxc.payload.web1", "web1", "lxc", "", "", ""},
      {"/lxc/db2", "db2", "lxc", "", "", ""},
      {"/lxc.monitor.web1", "", "", "", "", ""},
      {"/machine.slice/systemd-nspawn@build\\x2dbox.service/payload/system.slice/nginx.service", "build-box",
       "systemd-nspawn", "", "", "nginx.service"},
      {"/machine.slice/machine-deb12.scope", "deb12", "systemd-nspawn", "", "", ""},
      {"/system.slice/nginx.service", "", "", "", "", "nginx.service"},
      {"/system.slice/getty@tty1.service", "", "", "", "", "getty@tty1.service"},
      {"/system.slice/docker.service", "", "", "", "", "docker.service"},
      {"/user.slice/user-0.slice/session-3.scope", "", "", "", "", ""},
      {"/", "", "", "", "", ""},
      {"", "", "", "", "", ""},
      // Docker inside LXC: the innermost container.
      {"/lxc.payload.c1/system.slice/docker-" + kId + ".scope", kId, "docker", "", "", ""},
      // Not ids: too short, not hex, a pod outside kubepods.
      {"/system.slice/docker-abc.scope", "", "", "", "", ""},
      {"/system.slice/docker-" + std::string(64, 'z') + ".scope", "", "", "", "", ""},
      {"/pod" + kUid + "/" + kId2, "", "", "", "", ""},
      {"/kubepods/burstable/podnot-a-uid/" + kId2, "", "", "", "burstable", ""},
  };
  for (const Shape& s : shapes) {
    SCOPED_TRACE(s.path);
    const CgroupIdentity c = ParseCgroupPath(s.path);
    EXPECT_EQ(c.container_id, s.container_id);
    EXPECT_EQ(c.container_runtime, s.runtime);
    EXPECT_EQ(c.pod_uid, s.pod_uid);
    EXPECT_EQ(c.qos_class, s.pod_uid.empty() ? "" : s.qos);
    EXPECT_EQ(c.unit, s.unit);
    EXPECT_EQ(c.cgroup, s.path);
  }
}

TEST(CgroupParse, ProcCgroupFilesV2V1AndHybrid) {
  // v2 only.
  CgroupIdentity c = ParseProcCgroup("0::/system.slice/docker-" + kId + ".scope\n");
  EXPECT_EQ(c.container_id, kId);
  EXPECT_EQ(c.cgroup, "/system.slice/docker-" + kId + ".scope");
  // v1 only: docker's cgroupfs driver names the container in every controller.
  c = ParseProcCgroup("12:pids:/docker/" + kId2 + "\n11:cpu,cpuacct:/docker/" + kId2 +
                      "\n1:name=systemd:/docker/" + kId2 + "\n");
  EXPECT_EQ(c.container_id, kId2);
  EXPECT_EQ(c.cgroup, "/docker/" + kId2);
  // Hybrid: the v2 line names the unit; its path is the cgroup.
  c = ParseProcCgroup("12:memory:/system.slice/nginx.service\n1:name=systemd:/system.slice/nginx.service\n"
                      "0::/system.slice/nginx.service\n");
  EXPECT_EQ(c.unit, "nginx.service");
  EXPECT_EQ(c.cgroup, "/system.slice/nginx.service");
  // Hybrid with a container only in v1: the container from v1, the cgroup from v2.
  c = ParseProcCgroup("5:memory:/docker/" + kId2 + "\n0::/\n");
  EXPECT_EQ(c.container_id, kId2);
  EXPECT_EQ(c.cgroup, "/");
  // Malformed lines are skipped.
  c = ParseProcCgroup("garbage\n1:x\n2:cpu:relative\n0::/system.slice/crio-" + kId + ".scope");
  EXPECT_EQ(c.container_id, kId);
  EXPECT_EQ(c.container_runtime, "cri-o");
  // A path with ':' in it (the v1 containerd form) keeps its colons.
  c = ParseProcCgroup("3:cpu:/kubepods-besteffort-pod" + kUidUnderscore + ".slice:crio:" + kId + "\n");
  EXPECT_EQ(c.container_id, kId);
  EXPECT_EQ(c.pod_uid, kUid);
  EXPECT_EQ(c.qos_class, "besteffort");
  EXPECT_TRUE(ParseProcCgroup("").cgroup.empty());
  // A unit inside a container (systemd in an nspawn machine) is its unit; the
  // runtime's own unit above a container is not.
  CgroupIdentity nested =
      ParseCgroupPath("/machine.slice/systemd-nspawn@box.service/payload/system.slice/postgres.service");
  EXPECT_EQ(nested.unit, "postgres.service");
  EXPECT_EQ(nested.container_id, "box");
  CgroupIdentity under = ParseCgroupPath("/system.slice/containerd.service/kubepods-pod" + kUidUnderscore +
                                         ".slice:cri-containerd:" + kId);
  EXPECT_EQ(under.unit, "");
  EXPECT_TRUE(HasServiceUnit(ParseCgroupPath("/system.slice/nginx.service")));
  EXPECT_FALSE(HasServiceUnit(under));
}

TEST(CgroupParse, EnvironValue) {
  using namespace std::string_literals;
  const std::string env = "PATH=/bin\0OTEL_SERVICE_NAMES=no\0OTEL_SERVICE_NAME=checkout\0X=1"s;
  EXPECT_EQ(EnvironValue(env, "OTEL_SERVICE_NAME"), "checkout");
  EXPECT_EQ(EnvironValue(env, "MISSING"), "");
  EXPECT_EQ(EnvironValue("OTEL_SERVICE_NAME="s, "OTEL_SERVICE_NAME"), "");
  // Past the read bound: not seen.
  const std::string far = std::string(kEnvironReadMax, 'x') + "\0OTEL_SERVICE_NAME=late"s;
  EXPECT_EQ(EnvironValue(far, "OTEL_SERVICE_NAME"), "");
}

TEST(CgroupParse, HostileTextIsBoundedAndEscaped) {
  using namespace std::string_literals;
  // A delegated subtree named with terminal escapes and a unit of any length.
  const std::string evil = "/user.slice/user@1000.service/\x1b]0;owned\x07"s + std::string(10000, 'u') + ".service";
  CgroupIdentity c = ParseCgroupPath(evil);
  EXPECT_LE(c.cgroup.size(), 4 * kCgroupPathMax);
  EXPECT_EQ(c.cgroup.find('\x1b'), std::string::npos);
  EXPECT_LE(c.unit.size(), 4 * kCgroupFieldMax);
  const std::string env = "OTEL_SERVICE_NAME=\x1b[2J"s + std::string(5000, 'a');
  const std::string value = EnvironValue(env, "OTEL_SERVICE_NAME");
  EXPECT_EQ(value.find('\x1b'), std::string::npos);
  EXPECT_EQ(value.rfind("\\x1b[2J", 0), 0u);
  EXPECT_LE(value.size(), kCgroupFieldMax + 3);
  // An LXC name with a newline is escaped, not a second line.
  EXPECT_EQ(ParseCgroupPath("/lxc.payload.a\nb").container_id, "a\\x0ab");
  // Thousands of components and lines: bounded work, no crash.
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "/kubepods";
  (void)ParseCgroupPath(deep);
  std::string lines;
  for (int i = 0; i < 100000; ++i) lines += "1:cpu:/docker/x\n";
  EXPECT_EQ(ParseProcCgroup(lines).container_id, "");
}

}  // namespace
}  // namespace arcprof::procfs
