package peers

import "github.com/combmq/comb/bench"

// Register makes bench.NewDriver build the Redis Streams and NATS JetStream drivers
// (--driver redis, --driver nats) from the config's RedisAddr and NATSURL.
func Register() {
	bench.RegisterDriver(bench.DriverRedis, func(cfg bench.Config, conns int) (bench.Driver, error) {
		return NewRedisDriver(cfg.RedisAddr, conns), nil
	})
	bench.RegisterDriver(bench.DriverNATS, func(cfg bench.Config, _ int) (bench.Driver, error) {
		return NewNATSDriver(cfg.NATSURL)
	})
}
