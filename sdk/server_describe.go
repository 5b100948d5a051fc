package sdk

import (
	"context"
	"runtime/debug"

	"github.com/floehq/floe/sdk/internal/pb"
)

// describeServer answers the host's questions about the binary: which
// components it has, and whether a config suits one of them.
type describeServer struct {
	pb.UnimplementedDescribeServer
	s *server
}

func (d *describeServer) Describe(context.Context, *pb.DescribeRequest) (*pb.DescribeResponse, error) {
	resp := &pb.DescribeResponse{SdkVersion: sdkVersion()}
	for _, c := range d.s.components {
		resp.Components = append(resp.Components, componentToProto(c))
	}
	return resp, nil
}

// Validate runs the component's spec, including the plugin's own field
// checks and whole-config checks ([Spec.WithCheck]), which the host cannot
// run itself, and, when the host asks and those all passed, its probes
// ([Spec.WithProbe]) within the call's deadline. A check's error that
// names no key comes back with an empty key: the host shows it under the
// key naming the component.
func (d *describeServer) Validate(ctx context.Context, req *pb.ValidateRequest) (*pb.ValidateResponse, error) {
	c, err := d.s.component(kindFromProto(req.GetKind()), req.GetComponent())
	if err != nil {
		return nil, err
	}
	errs := c.Spec.Validate(req.GetConfig())
	if len(errs) == 0 && req.GetProbe() {
		errs = c.Spec.Probe(ctx, req.GetConfig())
	}
	return &pb.ValidateResponse{Errors: configErrorsToProto(errs)}, nil
}

// sdkVersion is the version of the floe module the plugin was built with,
// as Go recorded it in the binary.
func sdkVersion() string {
	const module = "github.com/floehq/floe"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if info.Main.Path == module {
		return info.Main.Version
	}
	for _, d := range info.Deps {
		if d.Path == module {
			if d.Replace != nil && d.Replace.Version != "" {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "unknown"
}
