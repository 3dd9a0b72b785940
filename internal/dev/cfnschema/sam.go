package cfnschema

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// The properties of AWS::Serverless::Function, from SAM's documentation and
// its translator (samtranslator's SamFunction): those SAM passes to the
// AWS::Lambda::Function it makes unchanged, those it turns into one of its
// properties, and those it uses for other resources (the role, versions,
// aliases, event sources, ...), which no registry schema describes.
var (
	samLambdaPassThrough = setOf("FunctionName", "Handler", "Runtime", "Description", "MemorySize", "Timeout",
		"VpcConfig", "Role", "Environment", "KmsKeyArn", "ReservedConcurrentExecutions", "Layers",
		"FileSystemConfigs", "ImageConfig", "PackageType", "Architectures", "SnapStart", "EphemeralStorage",
		"CodeSigningConfigArn", "RuntimeManagementConfig", "LoggingConfig", "RecursiveLoop")
	samLambdaConverted = setOf("CodeUri", "InlineCode", "ImageUri", "Tracing", "DeadLetterQueue", "Tags")
	samFunctionOnly    = setOf("Events", "Policies", "AssumeRolePolicyDocument", "RolePath",
		"PermissionsBoundary", "PropagateTags", "DeploymentPreference", "AutoPublishAlias",
		"AutoPublishCodeSha256", "AutoPublishAliasAllProperties", "VersionDescription",
		"VersionDeletionPolicy", "ProvisionedConcurrencyConfig", "EventInvokeConfig", "FunctionUrlConfig",
		"SourceKMSKeyArn")

	// samGlobalsFunction are the properties Globals.Function may set
	// (samtranslator's Globals.supported_properties): everything but
	// FunctionName, Role, Policies, Events and a few more.
	samGlobalsFunction = setOf("Handler", "Runtime", "CodeUri", "DeadLetterQueue", "Description", "MemorySize",
		"Timeout", "VpcConfig", "Environment", "Tags", "PropagateTags", "Tracing", "KmsKeyArn",
		"AutoPublishAlias", "AutoPublishAliasAllProperties", "Layers", "DeploymentPreference", "RolePath",
		"PermissionsBoundary", "ReservedConcurrentExecutions", "ProvisionedConcurrencyConfig",
		"AssumeRolePolicyDocument", "EventInvokeConfig", "FileSystemConfigs", "CodeSigningConfigArn",
		"Architectures", "SnapStart", "EphemeralStorage", "FunctionUrlConfig", "RuntimeManagementConfig",
		"LoggingConfig", "RecursiveLoop", "SourceKMSKeyArn")
)

// samPullEvent is an event source type of a SAM function that SAM turns
// into an AWS::Lambda::EventSourceMapping: the properties SAM documents
// for it, which it passes on under the same names, but for arn (Queue,
// Stream), which becomes EventSourceArn, and DestinationConfig.OnFailure's
// Type, which only tells SAM which policy to add to a role it makes.
type samPullEvent struct {
	arn      string
	props    map[string]bool
	required []string
}

var (
	samStreamEventProps = setOf("BatchSize", "BisectBatchOnFunctionError", "DestinationConfig", "Enabled",
		"FilterCriteria", "FunctionResponseTypes", "KmsKeyArn", "MaximumBatchingWindowInSeconds",
		"MaximumRecordAgeInSeconds", "MaximumRetryAttempts", "MetricsConfig", "ParallelizationFactor",
		"StartingPosition", "StartingPositionTimestamp", "Stream", "TumblingWindowInSeconds")
	samPullEvents = map[string]samPullEvent{
		"SQS": {arn: "Queue", required: []string{"Queue"}, props: setOf("BatchSize", "Enabled", "FilterCriteria",
			"FunctionResponseTypes", "KmsKeyArn", "MaximumBatchingWindowInSeconds", "MetricsConfig",
			"ProvisionedPollerConfig", "Queue", "ScalingConfig")},
		// StartingPosition, which SAM requires too, is eventSourceRules'.
		"DynamoDB": {arn: "Stream", required: []string{"Stream"}, props: samStreamEventProps},
		"Kinesis":  {arn: "Stream", required: []string{"Stream"}, props: samStreamEventProps},
	}
	samOnFailureTypes = []any{"SQS", "SNS", "S3"}
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// mergeGlobals merges a SAM resource's properties into its Globals as SAM
// does: the resource's scalar (or intrinsic) wins, maps merge key by key,
// lists concatenate, Globals' first. from tells where each top-level
// property came from: "Globals", "both" or "" (the resource).
func mergeGlobals(global, local map[string]any) (merged map[string]any, from map[string]string) {
	merged = map[string]any{}
	from = map[string]string{}
	for k, g := range global {
		merged[k] = g
		from[k] = "Globals"
	}
	for k, l := range local {
		g, ok := merged[k]
		if !ok {
			merged[k] = l
			from[k] = ""
			continue
		}
		merged[k] = mergeValue(g, l)
		from[k] = "both"
		if mergeToken(g) == "primitive" || mergeToken(g) != mergeToken(l) {
			from[k] = ""
		}
	}
	return merged, from
}

func mergeToken(v any) string {
	switch v := v.(type) {
	case map[string]any:
		if _, _, ok := intrinsic(v); ok {
			return "primitive"
		}
		return "map"
	case []any:
		return "list"
	}
	return "primitive"
}

func mergeValue(g, l any) any {
	if mergeToken(g) != mergeToken(l) {
		return l
	}
	switch g := g.(type) {
	case map[string]any:
		if mergeToken(g) == "primitive" {
			return l
		}
		lm := l.(map[string]any)
		out := make(map[string]any, len(g)+len(lm))
		for k, v := range g {
			out[k] = v
		}
		for k, v := range lm {
			if gv, ok := out[k]; ok {
				out[k] = mergeValue(gv, v)
			} else {
				out[k] = v
			}
		}
		return out
	case []any:
		return append(append([]any{}, g...), l.([]any)...)
	}
	return l
}

// globalsFor returns Globals.Function as it applies to a function with
// the given IgnoreGlobals attribute ("*" or a list of names).
func globalsFor(t *samtemplate.Template, r samtemplate.Resource) map[string]any {
	g, _ := t.Globals["Function"].(map[string]any)
	switch ig := r.Attributes["IgnoreGlobals"].(type) {
	case string:
		if ig == "*" {
			return nil
		}
	case []any:
		out := map[string]any{}
		for k, v := range g {
			out[k] = v
		}
		for _, name := range ig {
			if s, ok := name.(string); ok {
				delete(out, s)
			}
		}
		return out
	}
	return g
}

// checkSAMFunction checks a SAM function as the resources SAM makes of
// it: its properties, merged with Globals.Function, as the
// AWS::Lambda::Function's; each SQS, DynamoDB and Kinesis event as an
// AWS::Lambda::EventSourceMapping's (with Lambda's rules for the source).
//
// Not checked: what SAM alone reads (CodeUri's and ImageUri's content,
// Policies, AssumeRolePolicyDocument, RolePath, PermissionsBoundary,
// PropagateTags, DeploymentPreference, AutoPublishAlias and the version
// properties, ProvisionedConcurrencyConfig, EventInvokeConfig,
// FunctionUrlConfig, SourceKMSKeyArn), events of other types (HttpApi,
// Api, Schedule, S3, SNS, EventBridgeRule, ...: their names are checked,
// their properties not), and the role, permissions and other resources SAM
// generates. out.Unchecked lists what a function has of these.
func (out *Result) checkSAMFunction(ctx *registryContext, name string, r samtemplate.Resource) {
	t := ctx.t
	props, from := mergeGlobals(globalsFor(t, r), r.Properties)
	add := func(path, format string, args ...any) {
		out.Problems = append(out.Problems, ResourceProblem{name, r.Type, Problem{Path: path, Msg: fmt.Sprintf(format, args...)}})
	}
	var unchecked []string
	for _, k := range sortedKeys(r.Properties) {
		switch {
		case k == "CodeUri" || k == "ImageUri":
			unchecked = append(unchecked, k+" (what it points to)")
		case samLambdaPassThrough[k] || samLambdaConverted[k]:
		case samFunctionOnly[k]:
			if k != "Events" {
				unchecked = append(unchecked, k)
			}
		default:
			add("Properties."+k, "unknown property (not one of AWS::Serverless::Function)")
		}
	}

	lambda := map[string]any{}
	renames := map[string]string{}
	for _, k := range sortedKeys(props) {
		if samLambdaPassThrough[k] {
			lambda[k] = props[k]
		}
	}
	if v, ok := props["Tracing"]; ok && v != "Disabled" { // Disabled: whether SAM takes it depends on its version; not checked
		lambda["TracingConfig"] = map[string]any{"Mode": v}
		renames["TracingConfig.Mode"] = "Tracing"
	}
	if dlq, ok := props["DeadLetterQueue"].(map[string]any); ok {
		if typ, ok := dlq["Type"]; !ok || !inEnum(typ, []any{"SQS", "SNS"}) {
			add("Properties.DeadLetterQueue.Type", "%s is not SQS or SNS", describe(typ))
		}
		if target, ok := dlq["TargetArn"]; ok {
			lambda["DeadLetterConfig"] = map[string]any{"TargetArn": target}
			renames["DeadLetterConfig"] = "DeadLetterQueue"
		} else {
			add("Properties.DeadLetterQueue", "missing required property TargetArn")
		}
	}
	var tagKeys []string
	if tags, ok := props["Tags"].(map[string]any); ok {
		if _, _, isFn := intrinsic(tags); !isFn {
			list := []any{}
			tagKeys = sortedKeys(tags)
			for _, k := range tagKeys {
				list = append(list, map[string]any{"Key": k, "Value": tags[k]})
			}
			lambda["Tags"] = list
		}
	}
	zip := props["PackageType"] == nil || props["PackageType"] == "Zip"
	switch {
	case zip && props["InlineCode"] != nil:
		lambda["Code"] = map[string]any{"ZipFile": props["InlineCode"]}
		renames["Code.ZipFile"] = "InlineCode"
	case zip && props["CodeUri"] != nil:
		// sam package replaces CodeUri with the package's S3 location.
		lambda["Code"] = map[string]any{"S3Bucket": "sam-package", "S3Key": "code.zip"}
	case !zip && props["ImageUri"] != nil:
		lambda["Code"] = map[string]any{"ImageUri": props["ImageUri"]}
		renames["Code.ImageUri"] = "ImageUri"
	case zip:
		add("Properties", "a function of PackageType Zip needs CodeUri or InlineCode")
	default:
		add("Properties", "a function of PackageType Image needs ImageUri")
	}
	if lambda["Code"] == nil {
		lambda["Code"] = map[string]any{} // reported above
	}
	if zip {
		for _, k := range []string{"Runtime", "Handler"} {
			if props[k] == nil {
				add("Properties", "a function of PackageType Zip needs %s (SAM requires it)", k)
			}
		}
	}
	if _, ok := lambda["Role"]; !ok {
		// SAM makes the role, from Policies.
		lambda["Role"] = map[string]any{"Fn::GetAtt": []any{name + "Role", "Arn"}}
	}

	s, err := ctx.schemas.Schema("AWS::Lambda::Function")
	if err != nil {
		add("Type", "%v", err)
		return
	}
	out.Checked = append(out.Checked, name)
	problems := s.validate(lambda, t.Parameters, ctx, "Properties", conditionOf(t.Resources[name])...)
	problems = append(problems, lambdaFunctionRules(lambda, t.Parameters, "Properties")...)
	for _, p := range problems {
		p.Path = renamePath(p.Path, "Properties", renames)
		if rest, ok := strings.CutPrefix(p.Path, "Properties.Tags["); ok {
			var i int
			if _, err := fmt.Sscanf(rest, "%d]", &i); err == nil && i < len(tagKeys) {
				p.Path = "Properties.Tags." + tagKeys[i]
			}
		}
		top := strings.TrimPrefix(p.Path, "Properties.")
		if i := strings.IndexAny(top, ".["); i >= 0 {
			top = top[:i]
		}
		switch from[top] {
		case "Globals":
			p.Msg += " (from Globals.Function)"
		case "both":
			p.Msg += " (merged with Globals.Function's)"
		}
		p.Msg += " [as AWS::Lambda::Function]"
		add(p.Path, "%s", p.Msg)
	}

	events, ok := r.Properties["Events"].(map[string]any)
	if _, set := r.Properties["Events"]; set && !ok {
		add("Properties.Events", "%s is not a mapping of events", describe(r.Properties["Events"]))
	}
	for _, ev := range sortedKeys(events) {
		out.checkSAMEvent(ctx, name, r, ev, events[ev], &unchecked)
	}
	if len(unchecked) > 0 {
		out.Unchecked = append(out.Unchecked, fmt.Sprintf("%s (%s): %s", name, r.Type, strings.Join(unchecked, ", ")))
	}
}

// checkSAMEvent checks one of a SAM function's events: an SQS, DynamoDB or
// Kinesis one as the AWS::Lambda::EventSourceMapping SAM makes of it.
func (out *Result) checkSAMEvent(ctx *registryContext, fn string, r samtemplate.Resource, ev string, raw any, unchecked *[]string) {
	t := ctx.t
	root := "Properties.Events." + ev
	add := func(path, format string, args ...any) {
		out.Problems = append(out.Problems, ResourceProblem{fn, r.Type, Problem{Path: path, Msg: fmt.Sprintf(format, args...)}})
	}
	e, ok := raw.(map[string]any)
	if !ok {
		add(root, "an event is a mapping with Type and Properties")
		return
	}
	typ, _ := e["Type"].(string)
	kind, ok := samPullEvents[typ]
	if !ok {
		*unchecked = append(*unchecked, fmt.Sprintf("Events.%s (a %s event)", ev, describeType(e["Type"])))
		return
	}
	props, _ := e["Properties"].(map[string]any)
	root += ".Properties"
	esm := map[string]any{"FunctionName": map[string]any{"Ref": fn}}
	for _, k := range sortedKeys(props) {
		v := props[k]
		switch {
		case !kind.props[k]:
			add(root+"."+k, "unknown property (not one of SAM's %s event)", typ)
		case k == kind.arn:
			esm["EventSourceArn"] = v
		case k == "DestinationConfig":
			esm[k] = samDestinationConfig(v, func(path, msg string) { add(root+"."+k+path, "%s", msg) })
		default:
			esm[k] = v
		}
	}
	for _, k := range kind.required {
		if _, ok := props[k]; !ok {
			add(root, "missing required property %s (SAM's %s event)", k, typ)
		}
	}
	s, err := ctx.schemas.Schema("AWS::Lambda::EventSourceMapping")
	if err != nil {
		add(root, "%v", err)
		return
	}
	out.Checked = append(out.Checked, fn+".Events."+ev)
	problems := s.validate(esm, t.Parameters, ctx, root, conditionOf(t.Resources[fn])...)
	problems = append(problems, ctx.eventSourceRules(esm, t.Parameters, root, typ)...)
	for _, p := range problems {
		p.Path = renamePath(p.Path, root, map[string]string{"EventSourceArn": kind.arn})
		add(p.Path, "%s [as AWS::Lambda::EventSourceMapping]", p.Msg)
	}
}

func describeType(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return "typeless"
}

// samDestinationConfig is the DestinationConfig SAM passes on: OnFailure
// without Type, which must be SQS, SNS or S3 when set.
func samDestinationConfig(v any, add func(path, msg string)) any {
	dc, ok := v.(map[string]any)
	if !ok {
		return v
	}
	of, ok := dc["OnFailure"].(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for k, e := range dc {
		out[k] = e
	}
	stripped := map[string]any{}
	for k, e := range of {
		if k == "Type" {
			if !isType(e, "string") || !inEnum(e, samOnFailureTypes) {
				add(".OnFailure.Type", fmt.Sprintf("%s is not one of %s (SAM's event DestinationConfig)", describe(e), enumList(samOnFailureTypes)))
			}
			continue
		}
		stripped[k] = e
	}
	out["OnFailure"] = stripped
	return out
}

// renamePath turns a path of the resource SAM makes back into the SAM
// resource's: renames maps a property path under root (TracingConfig.Mode)
// to the SAM one's (Tracing).
func renamePath(path, root string, renames map[string]string) string {
	rest, ok := strings.CutPrefix(path, root+".")
	if !ok {
		return path
	}
	keys := make([]string, 0, len(renames))
	for k := range renames {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		if rest == k || strings.HasPrefix(rest, k+".") || strings.HasPrefix(rest, k+"[") {
			return root + "." + renames[k] + rest[len(k):]
		}
	}
	return path
}

// checkGlobals checks Globals.Function's property names: SAM rejects a
// template whose Globals set a property it does not merge.
func (out *Result) checkGlobals(t *samtemplate.Template) {
	g, _ := t.Globals["Function"].(map[string]any)
	for _, k := range sortedKeys(g) {
		if !samGlobalsFunction[k] {
			out.Problems = append(out.Problems, ResourceProblem{Problem: Problem{Path: "Globals.Function." + k,
				Msg: "is not a property SAM's Globals.Function takes"}})
		}
	}
}
