package redistest

import (
	"context"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// CommandStat is one command's line of INFO commandstats.
type CommandStat struct {
	Calls int64
	Usec  float64 // the server's own time in the command, in microseconds
}

// CommandStats reads INFO commandstats from rdb's server: per command, as
// Redis names it ("evalsha", "config|resetstat"), how often it ran and for
// how long since the server started or its last CONFIG RESETSTAT. The calls
// a script makes count on their own lines too, and in the script's.
func CommandStats(ctx context.Context, rdb redis.Cmdable) (map[string]CommandStat, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]CommandStat{}
	for line := range strings.SplitSeq(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, found := strings.CutPrefix(name, "cmdstat_")
		if !ok || !found {
			continue
		}
		var st CommandStat
		for kv := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				st.Calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				st.Usec, _ = strconv.ParseFloat(v, 64)
			}
		}
		out[name] = st
	}
	return out, nil
}
