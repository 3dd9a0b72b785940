package samtemplate_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func ref(name string) map[string]any { return map[string]any{"Ref": name} }

// Every alarm notifies someone, whatever the deployment's parameters: the
// topic AlarmTopicArn names, or, when it is empty (the default), a topic
// of the stack's own, to which AlarmEmail, when given, subscribes.
func TestTemplateAlarmsNotifyATopicWhetherOrNotOneIsGiven(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	topics := tpl.OfType("AWS::SNS::Topic")
	require.Equal(t, []string{"AlarmTopic"}, topics, "the stack's own alarm topic")
	given := map[string]string{"AlarmTopicArn": "arn:aws:sns:eu-west-1:123456789012:ops"}
	require.True(t, exists(t, tpl, nil, "AlarmTopic"), "created when no topic is given")
	require.False(t, exists(t, tpl, given, "AlarmTopic"), "not created when one is given")

	alarms := tpl.OfType("AWS::CloudWatch::Alarm")
	require.NotEmpty(t, alarms)
	for _, a := range alarms {
		actions := tpl.Resources[a].Properties["AlarmActions"]
		require.Equal(t, []any{ref("AlarmTopic")}, chosen(t, tpl, nil, actions), "%s without AlarmTopicArn", a)
		require.Equal(t, []any{ref("AlarmTopicArn")}, chosen(t, tpl, given, actions), "%s with AlarmTopicArn", a)
	}

	require.Equal(t, "", tpl.Parameters["AlarmEmail"].Default, "no subscription unless asked")
	require.Equal(t, []string{"AlarmEmailSubscription"}, tpl.OfType("AWS::SNS::Subscription"))
	email := map[string]string{"AlarmEmail": "ops@example.com"}
	require.False(t, exists(t, tpl, nil, "AlarmEmailSubscription"))
	require.True(t, exists(t, tpl, email, "AlarmEmailSubscription"))
	require.False(t, exists(t, tpl, map[string]string{"AlarmEmail": "ops@example.com", "AlarmTopicArn": given["AlarmTopicArn"]}, "AlarmEmailSubscription"),
		"a given topic is subscribed to by its owner, not by this stack")
	require.Equal(t, map[string]any{"Protocol": "email", "Endpoint": ref("AlarmEmail"), "TopicArn": ref("AlarmTopic")},
		chosen(t, tpl, email, tpl.Resources["AlarmEmailSubscription"].Properties))
}
