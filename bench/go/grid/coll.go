// The collections' rows of the data grid's bench (bench/grid_coll.py,
// `--only grid-coll`): hilock's Map, Set, ScoredSortedSet, SortedSet, List,
// Queue and Deque, and raw go-redis sending the command a go-redis user
// would. They join ops (main.go) at start-up.
package main

import (
	"context"

	"github.com/redis/go-redis/v9"
)

func nilOK(err error) error {
	if err == redis.Nil {
		return nil
	}
	return err
}

// bs: the arguments from i on as byte slices (a batch).
func (e *env) bs(i int) [][]byte {
	var out [][]byte
	for _, v := range e.a[i:] {
		b, _ := v.([]byte)
		out = append(out, b)
	}
	return out
}

func (e *env) strs(i int) []string {
	var out []string
	for _, b := range e.bs(i) {
		out = append(out, string(b))
	}
	return out
}

var collOps = map[string]func(e *env) call{
	"hilock map.get": func(e *env) call {
		o, k := e.hl.Map(e.name), e.b(0)
		return func(ctx context.Context) error { return ignore(o.Get(ctx, k)) }
	},
	"hilock map.put": func(e *env) call {
		o, k, v := e.hl.Map(e.name), e.b(0), e.b(1)
		return func(ctx context.Context) error { return ignore(o.Put(ctx, k, v)) }
	},
	"hilock map.fast_put": func(e *env) call {
		o, k, v := e.hl.Map(e.name), e.b(0), e.b(1)
		return func(ctx context.Context) error { return ignore(o.FastPut(ctx, k, v)) }
	},
	"hilock map.get_all": func(e *env) call {
		o, ks := e.hl.Map(e.name), e.bs(0)
		return func(ctx context.Context) error { return ignore(o.GetAll(ctx, ks...)) }
	},
	"hilock set.add": func(e *env) call {
		o, v := e.hl.Set(e.name), e.b(0)
		return func(ctx context.Context) error { return ignore(o.Add(ctx, v)) }
	},
	"hilock set.contains": func(e *env) call {
		o, v := e.hl.Set(e.name), e.b(0)
		return func(ctx context.Context) error { return ignore(o.Contains(ctx, v)) }
	},
	"hilock scored_sorted_set.add": func(e *env) call {
		o, s, v := e.hl.ScoredSortedSet(e.name), e.f(0), e.b(1)
		return func(ctx context.Context) error { return ignore(o.Add(ctx, s, v)) }
	},
	"hilock scored_sorted_set.rank": func(e *env) call {
		o, v := e.hl.ScoredSortedSet(e.name), e.b(0)
		return func(ctx context.Context) error { _, _, err := o.Rank(ctx, v); return err }
	},
	"hilock sorted_set.add": func(e *env) call {
		o, v := e.hl.SortedSet(e.name), e.b(0)
		return func(ctx context.Context) error { return ignore(o.Add(ctx, v)) }
	},
	"hilock list.add": func(e *env) call {
		o, v := e.hl.List(e.name), e.b(0)
		return func(ctx context.Context) error { return ignore(o.Add(ctx, v)) }
	},
	"hilock list.get": func(e *env) call {
		o, i := e.hl.List(e.name), e.i(0)
		return func(ctx context.Context) error { return ignore(o.Get(ctx, i)) }
	},
	"hilock queue.offer": func(e *env) call {
		o, v := e.hl.Queue(e.name), e.b(0)
		return func(ctx context.Context) error { return ignore(o.Offer(ctx, v)) }
	},
	"hilock queue.poll": func(e *env) call {
		o := e.hl.Queue(e.name)
		return func(ctx context.Context) error { return ignore(o.Poll(ctx)) }
	},
	"hilock deque.poll_last": func(e *env) call {
		o := e.hl.Deque(e.name)
		return func(ctx context.Context) error { return ignore(o.PollLast(ctx)) }
	},

	"goredis map.get": func(e *env) call {
		k := string(e.b(0))
		return func(ctx context.Context) error { return nilOK(e.rdb.HGet(ctx, e.name, k).Err()) }
	},
	"goredis map.fast_put": func(e *env) call {
		k, v := string(e.b(0)), e.b(1)
		return func(ctx context.Context) error { return e.rdb.HSet(ctx, e.name, k, v).Err() }
	},
	"goredis map.get_all": func(e *env) call {
		ks := e.strs(0)
		return func(ctx context.Context) error { return e.rdb.HMGet(ctx, e.name, ks...).Err() }
	},
	"goredis set.add": func(e *env) call {
		v := e.b(0)
		return func(ctx context.Context) error { return e.rdb.SAdd(ctx, e.name, v).Err() }
	},
	"goredis set.contains": func(e *env) call {
		v := e.b(0)
		return func(ctx context.Context) error { return e.rdb.SIsMember(ctx, e.name, v).Err() }
	},
	"goredis scored_sorted_set.add": func(e *env) call {
		z := redis.Z{Score: e.f(0), Member: e.b(1)}
		return func(ctx context.Context) error { return e.rdb.ZAdd(ctx, e.name, z).Err() }
	},
	"goredis scored_sorted_set.rank": func(e *env) call {
		v := string(e.b(0))
		return func(ctx context.Context) error { return nilOK(e.rdb.ZRank(ctx, e.name, v).Err()) }
	},
	"goredis list.add": func(e *env) call {
		v := e.b(0)
		return func(ctx context.Context) error { return e.rdb.RPush(ctx, e.name, v).Err() }
	},
	"goredis list.get": func(e *env) call {
		i := e.i(0)
		return func(ctx context.Context) error { return nilOK(e.rdb.LIndex(ctx, e.name, i).Err()) }
	},
	"goredis queue.offer": func(e *env) call {
		v := e.b(0)
		return func(ctx context.Context) error { return e.rdb.RPush(ctx, e.name, v).Err() }
	},
	"goredis queue.poll": func(e *env) call {
		return func(ctx context.Context) error { return nilOK(e.rdb.LPop(ctx, e.name).Err()) }
	},
	"goredis deque.poll_last": func(e *env) call {
		return func(ctx context.Context) error { return nilOK(e.rdb.RPop(ctx, e.name).Err()) }
	},
}

func init() {
	for k, v := range collOps {
		ops[k] = v
	}
}
