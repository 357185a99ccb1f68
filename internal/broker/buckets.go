package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// stateBucket creates or gets the task and workflow state bucket: one
// revision per key, no TTL.
func (p *provisioner) stateBucket(ctx context.Context) (jetstream.KeyValue, error) {
	return createOrGetKV(ctx, p.js, jetstream.KeyValueConfig{
		Bucket:   p.s.Names.StateBucket(),
		History:  1,
		Storage:  jetstream.FileStorage,
		Replicas: p.s.Replicas,
	})
}

// cacheBucket creates or gets the role result cache and brings its TTL to
// Settings.CacheTTL.
func (p *provisioner) cacheBucket(ctx context.Context) (jetstream.KeyValue, error) {
	name := p.s.Names.CacheBucket()
	kv, err := createOrGetKV(ctx, p.js, jetstream.KeyValueConfig{
		Bucket:   name,
		TTL:      p.s.CacheTTL,
		Storage:  jetstream.FileStorage,
		Replicas: p.s.Replicas,
	})
	if err != nil {
		return nil, err
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("bucket %s: status: %w", name, err)
	}
	if st.TTL() == p.s.CacheTTL {
		return kv, nil
	}
	cfg := st.Config()
	cfg.TTL = p.s.CacheTTL
	if kv, err = p.js.UpdateKeyValue(ctx, cfg); err != nil {
		return nil, fmt.Errorf("bucket %s: update ttl %s -> %s: %w", name, st.TTL(), p.s.CacheTTL, err)
	}
	p.log.Info("bucket setting changed", "bucket", name, "setting", "ttl", "old", st.TTL(), "new", p.s.CacheTTL)
	return kv, nil
}

// blobStore creates or gets the object store of large values.
func (p *provisioner) blobStore(ctx context.Context) (jetstream.ObjectStore, error) {
	name := p.s.Names.BlobStore()
	obs, err := p.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:   name,
		Storage:  jetstream.FileStorage,
		Replicas: p.s.Replicas,
	})
	if errors.Is(err, jetstream.ErrBucketExists) {
		obs, err = p.js.ObjectStore(ctx, name)
	}
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", name, err)
	}
	return obs, nil
}

// createOrGetKV creates a KV bucket, or gets the existing one when the name
// is taken, whatever its config.
func createOrGetKV(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.CreateKeyValue(ctx, cfg)
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = js.KeyValue(ctx, cfg.Bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}
