#include "kiln/gpu/simulated_provider.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace kiln::gpu {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string error_of(std::string_view text) {
  auto result = parse_simulated_inventory(text, "gpus.json");
  if (result) return "(parsed)";
  return result.error().to_string();
}

TEST(SimulatedInventory, ParsesGpusAndLinks) {
  auto inv = parse_simulated_inventory(R"({
    "gpus": [
      {"vendor": "nvidia", "model": "NVIDIA H100 80GB HBM3", "memory_mib": 81559, "arch": "sm_90",
       "uuid": "GPU-abc", "pci_bus_id": "00000000:18:00.0", "numa_node": 1, "memory_used_mib": 512},
      {"vendor": "amd", "model": "AMD Instinct MI300X", "memory_mib": 196592, "arch": "gfx942"}
    ],
    "links": [{"a": 1, "b": 0, "kind": "pcie-host", "width": 16}]})",
                                       "gpus.json");
  ASSERT_TRUE(inv) << inv.error().to_string();
  EXPECT_EQ(inv->provider, "simulated");
  ASSERT_EQ(inv->gpus.size(), 2u);
  const auto& h100 = inv->gpus[0];
  EXPECT_EQ(h100.index, 0);
  EXPECT_EQ(h100.uuid, "GPU-abc");
  EXPECT_EQ(h100.vendor, "nvidia");
  EXPECT_EQ(h100.arch, "sm_90");
  EXPECT_EQ(h100.memory_total_mib, 81559u);
  EXPECT_EQ(h100.memory_used_mib, 512u);
  EXPECT_EQ(h100.pci_bus_id, "00000000:18:00.0");
  EXPECT_EQ(h100.numa_node, 1);
  EXPECT_EQ(h100.driver_version, "simulated");
  const auto& mi300 = inv->gpus[1];
  EXPECT_EQ(mi300.index, 1);
  EXPECT_EQ(mi300.uuid, "GPU-sim-000000000001");  // generated: stable from the index
  EXPECT_EQ(mi300.numa_node, -1);
  EXPECT_EQ(mi300.memory_used_mib, 0u);
  ASSERT_EQ(inv->links.size(), 1u);
  EXPECT_EQ(inv->links[0].kind, LinkKind::pcie_host);
  EXPECT_EQ(inv->links[0].width, 16);
  EXPECT_EQ(inv->connection(0, 1), LinkKind::pcie_host);
  EXPECT_EQ(inv->connection(1, 0), LinkKind::pcie_host);
}

TEST(SimulatedInventory, GeneratedUuidsAreStableAndDistinct) {
  std::string spec = R"({"gpus": [
    {"vendor": "nvidia", "model": "m", "memory_mib": 1},
    {"vendor": "nvidia", "model": "m", "memory_mib": 1}]})";
  auto first = parse_simulated_inventory(spec, "a.json");
  auto second = parse_simulated_inventory(spec, "a.json");
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->gpus[0].uuid, second->gpus[0].uuid);
  EXPECT_NE(first->gpus[0].uuid, first->gpus[1].uuid);
  EXPECT_EQ(simulated_uuid(12), "GPU-sim-000000000012");
}

TEST(SimulatedInventory, ErrorsNameTheFileAndTheJsonPath) {
  EXPECT_EQ(error_of(R"({"gpus": [{"vendor": "nvidia", "model": "m", "memory_mib": 1},
                                  {"vendor": "nvidia", "model": "m", "memory_mb": 1}]})"),
            "gpus.json: error: gpus[1].memory_mb: unknown key");
  EXPECT_EQ(error_of(R"({"gpus": [{"vendor": "nvidia", "model": "m", "memory_mib": "80G"}]})"),
            "gpus.json: error: gpus[0].memory_mib: expected an integer, got a string");
  EXPECT_EQ(error_of(R"({"gpus": [{"vendor": "intel", "model": "m", "memory_mib": 1}]})"),
            "gpus.json: error: gpus[0].vendor: 'intel' is not a vendor (nvidia or amd)");
  EXPECT_EQ(error_of(R"({"gpus": [{"vendor": "amd", "memory_mib": 1}]})"),
            "gpus.json: error: gpus[0]: missing key 'model'");
  EXPECT_EQ(error_of(R"({"gpus": [{"vendor": "amd", "model": "m", "memory_mib": 1,
                                   "arch": "sm_90"}]})"),
            "gpus.json: error: gpus[0].arch: 'sm_90' is not an AMD gfx target (e.g. gfx942)");
  EXPECT_EQ(error_of(R"({"gpus": [], "extra": 1})"), "gpus.json: error: extra: unknown key");
  EXPECT_EQ(error_of(R"({"links": []})"), "gpus.json: error: missing key 'gpus'");
  EXPECT_EQ(error_of("[1]"), "gpus.json: error: expected a JSON object, got an array");
  EXPECT_EQ(error_of(R"({"gpus": {}})"),
            "gpus.json: error: gpus: expected an array, got an object");
  EXPECT_EQ(error_of(R"({"gpus": [{"vendor": "nvidia", "model": "m", "memory_mib": 1,
                                   "pci_bus_id": "18:00"}]})"),
            "gpus.json: error: gpus[0].pci_bus_id: '18:00' is not a PCI bus id (DDDD:BB:DD.F)");
  EXPECT_EQ(error_of(R"({"gpus": [{"vendor": "nvidia", "model": "m", "memory_mib": 1,
                                   "memory_used_mib": 2}]})"),
            "gpus.json: error: gpus[0].memory_used_mib: 2 is out of range [0, 1]");
  EXPECT_EQ(error_of(R"({"gpus": [{"vendor": "nvidia", "model": "m", "memory_mib": 1, "uuid": "X"},
                                  {"vendor": "nvidia", "model": "m", "memory_mib": 1, "uuid": "X"}]})"),
            "gpus.json: error: gpus[1].uuid: 'X' is used by an earlier GPU");
}

TEST(SimulatedInventory, BadLinksAreErrors) {
  std::string two = R"({"vendor": "nvidia", "model": "m", "memory_mib": 1},
                       {"vendor": "nvidia", "model": "m", "memory_mib": 1})";
  auto with_links = [&](std::string links) {
    return error_of(R"({"gpus": [)" + two + R"(], "links": )" + links + "}");
  };
  EXPECT_EQ(with_links(R"([{"a": 0, "b": 2, "kind": "nvlink"}])"),
            "gpus.json: error: links[0].b: GPU index 2 does not exist (2 GPUs)");
  EXPECT_EQ(with_links(R"([{"a": -1, "b": 1, "kind": "nvlink"}])"),
            "gpus.json: error: links[0].a: GPU index -1 does not exist (2 GPUs)");
  EXPECT_EQ(with_links(R"([{"a": 1, "b": 1, "kind": "nvlink"}])"),
            "gpus.json: error: links[0]: a link from GPU 1 to itself");
  EXPECT_EQ(with_links(R"([{"a": 0, "b": 1, "kind": "infiniband"}])"),
            "gpus.json: error: links[0].kind: 'infiniband' is not a link kind (nvlink, xgmi, "
            "pcie-switch, pcie-host, numa, sys)");
  EXPECT_EQ(with_links(R"([{"a": 0, "b": 1, "kind": "nvlink"}, {"a": 1, "b": 0, "kind": "sys"}])"),
            "gpus.json: error: links[1]: GPUs 1 and 0 are already linked");
  EXPECT_EQ(with_links(R"([{"a": 0, "b": 1, "kind": "nvlink", "lanes": 4}])"),
            "gpus.json: error: links[0].lanes: unknown key");
  EXPECT_EQ(with_links(R"([{"a": 0, "b": 1, "kind": "nvlink", "width": 1.5}])"),
            "gpus.json: error: links[0].width: expected an integer, got a number");
}

TEST(SimulatedInventory, SyntaxErrorsHaveALineAndColumn) {
  auto error = error_of("{\"gpus\": [\n  {\"vendor\": nvidia}\n]}");
  EXPECT_EQ(error.rfind("gpus.json:2:", 0), 0u) << error;
  EXPECT_NE(error.find("not valid JSON"), std::string::npos) << error;
}

// nlohmann::json throws out_of_range, not parse_error, for a number too large for a double.
TEST(SimulatedInventory, ANumberTooLargeIsAnErrorNotAnException) {
  auto error = error_of("{\"gpus\": [{\"vendor\": \"nvidia\", \"memory_mib\": 1E400}]}");
  EXPECT_EQ(error.rfind("gpus.json: error: not valid JSON: number overflow", 0), 0u) << error;
}

TEST(SimulatedInventory, ConnectionFallsBackToNumaThenSys) {
  auto inv = load_simulated_inventory(fs::path(KILN_SOURCE_DIR) /
                                      "tests/data/gpu/h100-8x-two-islands.json");
  ASSERT_TRUE(inv) << inv.error().to_string();
  ASSERT_EQ(inv->gpus.size(), 8u);
  EXPECT_EQ(inv->connection(0, 3), LinkKind::nvlink);
  EXPECT_EQ(inv->connection(5, 6), LinkKind::nvlink);
  EXPECT_EQ(inv->connection(0, 4), LinkKind::sys);  // listed
  EXPECT_EQ(inv->connection(1, 5), LinkKind::sys);  // different NUMA nodes, no link listed
  EXPECT_EQ(inv->gpus[5].memory_used_mib, 40000u);
  inv->links.clear();
  EXPECT_EQ(inv->connection(0, 3), LinkKind::numa);  // same NUMA node
}

TEST(SimulatedProvider, ReadsTheFileAndNamesItselfASimulation) {
  SimulatedProvider provider(fs::path(KILN_SOURCE_DIR) / "tests/data/gpu/one-h200.json");
  EXPECT_EQ(provider.name(), "simulated");
  auto inv = provider.inventory(5s);
  ASSERT_TRUE(inv) << inv.error().to_string();
  EXPECT_EQ(inv->provider, "simulated");
  ASSERT_EQ(inv->gpus.size(), 1u);
  EXPECT_EQ(inv->gpus[0].uuid, "GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
  auto json = inventory_to_json(*inv);
  EXPECT_EQ(json["provider"], "simulated");
  EXPECT_EQ(json["gpus"][0]["memory_total_mib"], 143771);
  EXPECT_EQ(json["gpus"][0]["arch"], "sm_90");
  EXPECT_TRUE(json["links"].is_array());
}

TEST(SimulatedProvider, MissingFileIsNotFound) {
  SimulatedProvider provider("/nonexistent/gpus.json");
  auto inv = provider.inventory(5s);
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().code, ErrorCode::not_found);
  EXPECT_EQ(inv.error().to_string(),
            "/nonexistent/gpus.json: error: cannot read the simulated GPU inventory");
}

// Fault injection: a job's step creates the file, and from then on the GPU reports the fault or
// is not listed (fallen off the bus); the GPUs after a vanished one move up, keeping their UUIDs.
TEST(SimulatedProvider, InjectsFaultsAndVanishingOnceTheFileExists) {
  auto dir = fs::temp_directory_path() / ("kiln-sim-inject-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto xid = dir / "xid", gone = dir / "gone";
  auto spec = dir / "gpus.json";
  std::ofstream(spec) << R"({"gpus": [
    {"vendor": "nvidia", "model": "H100", "memory_mib": 1000,
     "inject": {"when": ")"
                      << xid.string() << R"(", "faults": ["Xid 79: GPU has fallen off the bus"]}},
    {"vendor": "nvidia", "model": "H100", "memory_mib": 1000,
     "inject": {"when": ")"
                      << gone.string() << R"(", "vanish": true}},
    {"vendor": "nvidia", "model": "H100", "memory_mib": 1000}],
    "links": [{"a": 0, "b": 1, "kind": "nvlink"}, {"a": 0, "b": 2, "kind": "nvlink"}]})";
  SimulatedProvider provider(spec);
  auto before = provider.inventory(5s);
  ASSERT_TRUE(before) << before.error().to_string();
  ASSERT_EQ(before->gpus.size(), 3u);
  EXPECT_TRUE(before->gpus[0].faults.empty());

  std::ofstream{xid};
  auto faulty = provider.inventory(5s);
  ASSERT_TRUE(faulty);
  EXPECT_EQ(faulty->gpus[0].faults, std::vector<std::string>{"Xid 79: GPU has fallen off the bus"});

  std::ofstream{gone};
  auto vanished = provider.inventory(5s);
  ASSERT_TRUE(vanished);
  ASSERT_EQ(vanished->gpus.size(), 2u);
  EXPECT_EQ(vanished->gpus[1].uuid, simulated_uuid(2));
  EXPECT_EQ(vanished->gpus[1].index, 1);
  ASSERT_EQ(vanished->links.size(), 1u);  // the link to the vanished GPU went with it
  EXPECT_EQ(vanished->links[0].b, 1);
  fs::remove_all(dir);
}

TEST(SimulatedInventory, AnInjectionMustInjectSomething) {
  EXPECT_EQ(error_of(R"({"gpus": [{"vendor": "nvidia", "model": "m", "memory_mib": 1,
                        "inject": {"when": "/tmp/x"}}]})"),
            "gpus.json: error: gpus[0].inject: injects nothing: give 'faults', 'vanish': true, "
            "or both");
  EXPECT_EQ(error_of(R"({"gpus": [{"vendor": "nvidia", "model": "m", "memory_mib": 1,
                        "inject": {"when": "/tmp/x", "vanish": true, "after": 3}}]})"),
            "gpus.json: error: gpus[0].inject.after: unknown key");
}

TEST(LinkKind, NamesRoundTripAndFabricsRankFirst) {
  for (auto kind : {LinkKind::nvlink, LinkKind::xgmi, LinkKind::pcie_switch, LinkKind::pcie_host,
                    LinkKind::numa, LinkKind::sys}) {
    EXPECT_EQ(parse_link_kind(link_kind_name(kind)), kind);
  }
  EXPECT_FALSE(parse_link_kind("pcie_switch"));  // the spec spells it with a dash
  EXPECT_EQ(link_rank(LinkKind::nvlink), link_rank(LinkKind::xgmi));
  EXPECT_LT(link_rank(LinkKind::xgmi), link_rank(LinkKind::pcie_switch));
  EXPECT_LT(link_rank(LinkKind::pcie_switch), link_rank(LinkKind::pcie_host));
  EXPECT_LT(link_rank(LinkKind::pcie_host), link_rank(LinkKind::numa));
  EXPECT_LT(link_rank(LinkKind::numa), link_rank(LinkKind::sys));
}

}  // namespace
}  // namespace kiln::gpu
