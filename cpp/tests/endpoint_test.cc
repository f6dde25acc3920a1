// Master addresses as users configure them ("host1:port1,host2:port2", protocol.md
// §1.1) and the Endpoint that keys the connection pool.
#include <gtest/gtest.h>

#include "meta/endpoint.h"
#include "tubemq/client_config.h"

namespace tubemq {
namespace {

TEST(Endpoint, ParsesHostPortAndRefusesTheRest) {
  meta::Endpoint endpoint;
  ASSERT_TRUE(meta::ParseEndpoint("127.0.0.1:8715", endpoint).ok());
  EXPECT_EQ(endpoint.host, "127.0.0.1");
  EXPECT_EQ(endpoint.port, 8715);
  for (const char* bad : {"", "host", ":8715", "host:", "host:0", "host:65536", "host:12a",
                          "a:b:c"}) {
    const Status status = meta::ParseEndpoint(bad, endpoint);
    EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument) << bad;
  }
}

TEST(Endpoint, MasterListsDropBlanksAndDuplicatesAndKeepOrder) {
  std::vector<meta::Endpoint> masters;
  ASSERT_TRUE(meta::ParseEndpointList(" b:2 , a:1,,b:2 ", masters).ok());
  ASSERT_EQ(masters.size(), 2u);
  EXPECT_EQ(masters[0].ToString(), "b:2");
  EXPECT_EQ(masters[1].ToString(), "a:1");
  EXPECT_FALSE(meta::ParseEndpointList(" , ", masters).ok());
  EXPECT_FALSE(meta::ParseEndpointList("a:1,bad", masters).ok());
}

TEST(Endpoint, BlanksAroundHostAndPortAreTrimmed) {
  meta::Endpoint endpoint;
  ASSERT_TRUE(meta::ParseEndpoint("  master.local : 8715 \t", endpoint).ok());
  EXPECT_EQ(endpoint.host, "master.local");
  EXPECT_EQ(endpoint.port, 8715);
  EXPECT_EQ(endpoint.ToString(), "master.local:8715");
}

TEST(Endpoint, PortBoundsAreInclusive) {
  meta::Endpoint endpoint;
  ASSERT_TRUE(meta::ParseEndpoint("h:1", endpoint).ok());
  EXPECT_EQ(endpoint.port, 1);
  ASSERT_TRUE(meta::ParseEndpoint("h:65535", endpoint).ok());
  EXPECT_EQ(endpoint.port, 65535);
  for (const char* bad : {"h:-1", "h:+80", "h:99999999999999999999", "h: ", "h:8 0"}) {
    EXPECT_EQ(meta::ParseEndpoint(bad, endpoint).code(), ErrorCode::kInvalidArgument) << bad;
  }
}

TEST(Endpoint, ErrorsNameTheBadInput) {
  meta::Endpoint endpoint{"unchanged", 1};
  const Status status = meta::ParseEndpoint("master-without-port", endpoint);
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(status.message().find("master-without-port"), std::string::npos) << status.message();
  EXPECT_EQ(endpoint.host, "unchanged") << "a failed parse leaves the output alone";
}

TEST(Endpoint, ListErrorsNameTheBadEntryAndEmptyListsAreRefused) {
  std::vector<meta::Endpoint> masters;
  Status status = meta::ParseEndpointList("a:1,b:2,c:x", masters);
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(status.message().find("c:x"), std::string::npos) << status.message();
  for (const char* empty : {"", " ", ",", " , ,"}) {
    EXPECT_EQ(meta::ParseEndpointList(empty, masters).code(), ErrorCode::kInvalidArgument)
        << "'" << empty << "'";
  }
}

TEST(Endpoint, ASingleMasterIsAList) {
  std::vector<meta::Endpoint> masters;
  ASSERT_TRUE(meta::ParseEndpointList("10.0.0.1:8715", masters).ok());
  ASSERT_EQ(masters.size(), 1u);
  EXPECT_EQ(masters[0], (meta::Endpoint{"10.0.0.1", 8715}));
}

TEST(Endpoint, EqualityAndOrderingUseHostThenPort) {
  const meta::Endpoint a{"a", 2};
  const meta::Endpoint b{"a", 10};
  const meta::Endpoint c{"b", 1};
  EXPECT_TRUE(a < b);
  EXPECT_TRUE(b < c);
  EXPECT_FALSE(b < a);
  EXPECT_EQ(a, (meta::Endpoint{"a", 2}));
  EXPECT_FALSE(a == b);
}

}  // namespace
}  // namespace tubemq

namespace tubemq {
namespace {

// The words the Python facade passes on as ConfigError (tests/unit/test_config.py).
TEST(Endpoint, MasterListProblemsUseTheFacadesWords) {
  EXPECT_EQ(MasterListProblem("a:1, b:2"), "");
  EXPECT_EQ(MasterListProblem(" , "), "no master address given");
  EXPECT_EQ(MasterListProblem("a:1,b"), "'b' is not host:port");
  EXPECT_EQ(MasterListProblem(":1"), "':1' is not host:port");
  EXPECT_EQ(MasterListProblem("a:0"), "'a:0' has no valid port (1..65535)");
  EXPECT_EQ(MasterListProblem("a:http"), "'a:http' has no valid port (1..65535)");
}

}  // namespace
}  // namespace tubemq
