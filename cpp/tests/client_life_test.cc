// The life shared by producer and consumer (service/client_life.h): which Start() call
// registers, what the others answer, and that Close() wins over a registration.
#include <gtest/gtest.h>

#include "service/client_life.h"

namespace tubemq::service {
namespace {

TEST(ClientLife, OneStartRegistersTheOthersAnswerAtOnce) {
  ClientLife life;
  Status answer;
  ASSERT_TRUE(life.BeginStart("the producer", answer));
  EXPECT_TRUE(life.live());
  EXPECT_FALSE(life.BeginStart("the producer", answer));  // while starting: OK
  EXPECT_TRUE(answer.ok());
  life.EndStart(/*registered=*/true);
  EXPECT_TRUE(life.running());
  EXPECT_FALSE(life.BeginStart("the producer", answer));
  EXPECT_TRUE(answer.ok());
}

TEST(ClientLife, ARefusedRegistrationMayBeTriedAgain) {
  ClientLife life;
  Status answer;
  ASSERT_TRUE(life.BeginStart("the consumer", answer));
  life.EndStart(/*registered=*/false);
  EXPECT_FALSE(life.live());
  EXPECT_TRUE(life.BeginStart("the consumer", answer));
}

TEST(ClientLife, CloseWinsOverARegistrationUnderWay) {
  ClientLife life;
  Status answer;
  ASSERT_TRUE(life.BeginStart("the consumer", answer));
  bool registered = true;
  ASSERT_TRUE(life.BeginClose(registered));
  EXPECT_FALSE(registered);  // not running yet: no master session to leave
  life.EndStart(/*registered=*/true);  // the late outcome changes nothing
  EXPECT_FALSE(life.running());
  EXPECT_TRUE(life.closing());
  EXPECT_FALSE(life.BeginClose(registered));  // a second Close() is a no-op
  life.EndClose();
  EXPECT_FALSE(life.BeginStart("the consumer", answer));
  EXPECT_EQ(answer.code(), ErrorCode::kClientShutdown);
  EXPECT_EQ(answer.message(), "the consumer is closed");
}

TEST(ClientLife, ARunningClientLeavesTheMasterOnClose) {
  ClientLife life;
  Status answer;
  life.BeginStart("the producer", answer);
  life.EndStart(true);
  bool registered = false;
  ASSERT_TRUE(life.BeginClose(registered));
  EXPECT_TRUE(registered);
  EXPECT_FALSE(life.running());
}

}  // namespace
}  // namespace tubemq::service
