//! Generation options, capabilities, input forms and progress events.

use crate::common;

use bosun_core::{
    BuildError, Capabilities, ContentPart, Event, GenerationOptions, Message, OutputSchema, Session, Support,
    Thinking, ToolCategory, ToolOutput, TurnErrorKind, TurnOptions,
};
use bosun_testing::{FnTool, Reply, ScriptedModel};
use common::TestResult;
use serde_json::json;

fn options(max_tokens: Option<u32>, thinking: Option<Thinking>) -> GenerationOptions {
    let mut options = GenerationOptions::default();
    options.max_tokens = max_tokens;
    options.thinking = thinking;
    options
}

#[tokio::test]
async fn turn_options_layer_over_session_options() -> TestResult {
    let model = ScriptedModel::new().answer("a").answer("b");
    let mut session = Session::builder(model.clone())
        .options(options(Some(1000), Some(Thinking::On { budget: Some(2048) })))
        .build()
        .await?;
    let turn = TurnOptions::default().with_generation(options(None, Some(Thinking::Off)));
    session.run_with("one", turn, &mut Vec::new()).await?;
    session.run("two", &mut Vec::new()).await?;
    let requests = model.requests();
    assert_eq!(requests[0].options.max_tokens, Some(1000), "unset turn fields keep the session's");
    assert_eq!(requests[0].options.thinking, Some(Thinking::Off), "set turn fields win");
    assert_eq!(requests[1].options.thinking, Some(Thinking::On { budget: Some(2048) }), "only for that turn");
    Ok(())
}

#[tokio::test]
async fn a_turns_output_schema_reaches_every_round_of_that_turn_only() -> TestResult {
    let model = ScriptedModel::new().tool_call("read", json!({})).answer("{\"ok\": true}").answer("free");
    let mut session = Session::builder(model.clone()).tool(FnTool::echo("read")).build().await?;
    let schema = OutputSchema::new("answer", json!({"type": "object"}));
    let mut generation = GenerationOptions::default();
    generation.output_schema = Some(schema.clone());
    session.run_with("one", TurnOptions::default().with_generation(generation), &mut Vec::new()).await?;
    session.run("two", &mut Vec::new()).await?;
    let sent: Vec<Option<OutputSchema>> =
        model.requests().into_iter().map(|r| r.options.output_schema).collect();
    assert_eq!(
        sent,
        [Some(schema.clone()), Some(schema), None],
        "the call's round, the answer's, the next turn"
    );
    // Unset, the field is absent from the options' serde form.
    let form = serde_json::to_value(GenerationOptions::default())?;
    assert!(form.get("output_schema").is_none(), "{form}");
    Ok(())
}

#[tokio::test]
async fn thinking_toggle_is_refused_when_the_model_cannot_toggle() -> TestResult {
    let mut caps = Capabilities::all();
    caps.thinking_toggle = Support::No;
    let err = Session::builder(ScriptedModel::with_capabilities(caps))
        .options(options(None, Some(Thinking::On { budget: None })))
        .build()
        .await
        .unwrap_err();
    assert!(matches!(err, BuildError::Capability(_)), "{err}");
    let mut session = Session::builder(ScriptedModel::with_capabilities(caps).answer("x")).build().await?;
    let turn = TurnOptions::default().with_generation(options(None, Some(Thinking::Off)));
    let err = session.run_with("go", turn, &mut Vec::new()).await.unwrap_err();
    assert!(matches!(err.kind, TurnErrorKind::Capability(_)), "{err}");
    assert!(session.history().is_empty());
    Ok(())
}

#[tokio::test]
async fn tools_are_refused_for_a_model_without_tool_calls() {
    let mut caps = Capabilities::all();
    caps.tools = Support::No;
    let err = Session::builder(ScriptedModel::with_capabilities(caps))
        .tool(FnTool::echo("read"))
        .build()
        .await
        .unwrap_err();
    assert!(matches!(err, BuildError::Capability("tool calls")));
}

#[tokio::test]
async fn reasoning_is_not_replayed_to_a_model_that_cannot_take_it_back() -> TestResult {
    let mut caps = Capabilities::all();
    caps.reasoning_replay = Support::No;
    let model = ScriptedModel::with_capabilities(caps)
        .reply(Reply::new().reasoning("secret plan").text("a"))
        .answer("b");
    let mut session = Session::builder(model.clone()).build().await?;
    session.run("one", &mut Vec::new()).await?;
    session.run("two", &mut Vec::new()).await?;
    let sent = serde_json::to_string(&model.requests()[1].messages)?;
    assert!(!sent.contains("secret plan"), "{sent}");
    let kept = serde_json::to_string(session.history())?;
    assert!(kept.contains("secret plan"), "the transcript keeps it");
    Ok(())
}

#[tokio::test]
async fn system_prompt_and_multimodal_input_reach_the_model() -> TestResult {
    let model = ScriptedModel::new().answer("a cat");
    let mut session = Session::builder(model.clone()).system_prompt("describe images").build().await?;
    let input = vec![ContentPart::text("what is this?"), ContentPart::image("image/png", vec![0x89, b'P'])];
    session.run(input.clone(), &mut Vec::new()).await?;
    let request = &model.requests()[0];
    assert_eq!(request.system.as_deref(), Some("describe images"));
    assert_eq!(request.messages, vec![Message::User { content: input }]);
    Ok(())
}

#[tokio::test]
async fn an_image_is_refused_before_the_turn_for_a_model_without_images() -> TestResult {
    let mut caps = Capabilities::all();
    caps.images = Support::No;
    let model = ScriptedModel::with_capabilities(caps).answer("x");
    let journal = bosun_core::InMemoryJournal::new();
    let mut session = Session::builder(model.clone()).journal(journal.clone()).build().await?;
    let input = vec![ContentPart::text("what is this?"), ContentPart::image("image/png", vec![0x89, b'P'])];
    let built = journal.records().len();
    let mut events = Vec::new();
    let err = session.run(input, &mut events).await.unwrap_err();
    assert!(matches!(err.kind, TurnErrorKind::Capability("images")), "{err}");
    assert_eq!(err.to_string(), "the model does not support images");
    assert!(model.requests().is_empty(), "nothing was sent");
    assert!(events.is_empty() && session.history().is_empty(), "no turn started: {events:?}");
    assert_eq!(journal.records().len(), built, "nothing was journaled");
    Ok(())
}

#[tokio::test]
async fn images_in_history_reach_a_model_without_images_as_a_note() -> TestResult {
    let mut caps = Capabilities::all();
    caps.images = Support::No;
    let shot = FnTool::new("shot", ToolCategory::Read, |_, _| {
        Box::pin(async {
            ToolOutput::new(
                vec![ContentPart::text("the screen:"), ContentPart::image("image/png", vec![7; 2048])],
                false,
            )
        })
    });
    let model = ScriptedModel::with_capabilities(caps).tool_call("shot", json!({})).answer("done");
    let mut session = Session::builder(model.clone()).tool(shot).build().await?;
    session.run("look", &mut Vec::new()).await?;
    let sent = serde_json::to_string(&model.requests()[1].messages)?;
    assert!(!sent.contains("\"type\":\"image\""), "{sent}");
    assert!(
        sent.contains("[an image (image/png, 2 KiB) was left out: this model does not accept images]"),
        "{sent}"
    );
    let kept = &session.history()[2];
    assert!(
        kept.content().iter().any(|p| matches!(p, ContentPart::Image { .. })),
        "history keeps it: {kept:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_turn_takes_only_user_input() -> TestResult {
    let mut session = Session::builder(ScriptedModel::new().answer("x")).build().await?;
    let err = session.run(Message::System { text: "sneaky".into() }, &mut Vec::new()).await.unwrap_err();
    assert!(matches!(err.kind, TurnErrorKind::NotUserInput(_)), "{err}");
    assert_eq!(session.turns(), 0);
    Ok(())
}

#[tokio::test]
async fn tool_progress_reaches_the_event_stream() -> TestResult {
    let model = ScriptedModel::new().tool_call("build", json!({})).answer("built");
    let build = FnTool::new("build", ToolCategory::Read, |_, context| {
        Box::pin(async move {
            context.progress.report("compiling 1/2");
            tokio::task::yield_now().await;
            context.progress.report("compiling 2/2");
            tokio::task::yield_now().await;
            ToolOutput::text("ok")
        })
    });
    let mut session = Session::builder(model).tool(build).build().await?;
    let mut events = Vec::new();
    session.run("go", &mut events).await?;
    let progress: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolProgress { message, .. } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(progress, ["compiling 1/2", "compiling 2/2"]);
    Ok(())
}

/// The `tool_progress` messages of `events`, with the index of each event.
fn progress_messages(events: &[Event]) -> Vec<(usize, &str)> {
    events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            Event::ToolProgress { message, .. } => Some((i, message.as_str())),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_progress_flood_is_coalesced_to_a_bounded_rate_per_call_and_ends_with_the_newest() -> TestResult {
    // Two calls in one batch, each reporting every millisecond for a
    // second: 2,000 reports.
    let model = ScriptedModel::new()
        .reply(Reply::new().tool_call("flood", json!({"n": "a"})).tool_call("flood", json!({"n": "b"})))
        .answer("done");
    let flood = FnTool::new("flood", ToolCategory::Read, |arguments, context| {
        Box::pin(async move {
            let name = arguments["n"].as_str().unwrap_or_default().to_owned();
            for i in 1..=1000 {
                context.progress.report(format!("{name} {i}/1000"));
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            ToolOutput::text("ok")
        })
    });
    let mut session = Session::builder(model).tool(flood).build().await?;
    let mut events = Vec::new();
    session.run("go", &mut events).await?;
    let ends: Vec<usize> = events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| matches!(e, Event::ToolEnd { .. }).then_some(i))
        .collect();
    assert_eq!(ends.len(), 2, "{events:?}");
    let limit = 1000 / bosun_core::PROGRESS_INTERVAL.as_millis() as usize + 2;
    for name in ["a", "b"] {
        let shown: Vec<(usize, &str)> =
            progress_messages(&events).into_iter().filter(|(_, m)| m.starts_with(name)).collect();
        assert!(
            (limit - 3..=limit).contains(&shown.len()),
            "about one report per interval for call {name}, not 1,000: {shown:?}"
        );
        let (last_at, last) = shown[shown.len() - 1];
        assert_eq!(last, format!("{name} 1000/1000"), "the newest report is shown last");
        assert!(ends.iter().any(|end| *end > last_at), "its last report comes before its end");
    }
    Ok(())
}

#[tokio::test]
async fn a_calls_newest_report_is_shown_even_when_the_channel_was_full() -> TestResult {
    // 10,000 reports with no pause: the batch's channel fills long before
    // the last, which must still be the last shown.
    let model = ScriptedModel::new().tool_call("burst", json!({})).answer("done");
    let burst = FnTool::new("burst", ToolCategory::Read, |_, context| {
        Box::pin(async move {
            for i in 1..=10_000 {
                context.progress.report(format!("{i}/10000"));
            }
            ToolOutput::text("ok")
        })
    });
    let mut session = Session::builder(model).tool(burst).build().await?;
    let mut events = Vec::new();
    session.run("go", &mut events).await?;
    let shown = progress_messages(&events);
    assert_eq!(shown.last().map(|(_, m)| *m), Some("10000/10000"), "{} shown", shown.len());
    assert!(shown.len() < 300, "coalesced: {} shown", shown.len());
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_held_report_is_shown_when_its_interval_is_up_while_the_call_runs() -> TestResult {
    // The call reports twice at once, then waits for the second report to
    // be shown: only the interval's timer can show it.
    let (seen_tx, seen_rx) = tokio::sync::watch::channel(false);
    let model = ScriptedModel::new().tool_call("wait", json!({})).answer("done");
    let wait = FnTool::new("wait", ToolCategory::Read, move |_, context| {
        let mut seen = seen_rx.clone();
        Box::pin(async move {
            context.progress.report("first");
            context.progress.report("second");
            let shown = seen.wait_for(|seen| *seen).await.is_ok();
            ToolOutput::text(if shown { "shown" } else { "never shown" })
        })
    });
    struct Watching(Vec<Event>, tokio::sync::watch::Sender<bool>);
    impl bosun_core::event::EventSink for Watching {
        fn emit(&mut self, event: Event) -> Result<(), bosun_core::event::SinkError> {
            if matches!(&event, Event::ToolProgress { message, .. } if message == "second") {
                self.1.send_replace(true);
            }
            self.0.push(event);
            Ok(())
        }
    }
    let mut session = Session::builder(model).tool(wait).build().await?;
    let mut sink = Watching(Vec::new(), seen_tx);
    session.run("go", &mut sink).await?;
    let shown: Vec<&str> = progress_messages(&sink.0).into_iter().map(|(_, m)| m).collect();
    assert_eq!(shown, ["first", "second"]);
    let ended = sink.0.iter().find_map(|e| match e {
        Event::ToolEnd { output, .. } => Some(output.as_str()),
        _ => None,
    });
    assert_eq!(ended, Some("shown"));
    Ok(())
}

#[tokio::test]
async fn tool_output_reaches_the_event_stream_bounded() -> TestResult {
    let model = ScriptedModel::new().tool_call("build", json!({})).answer("built");
    let build = FnTool::new("build", ToolCategory::Read, |_, context| {
        Box::pin(async move {
            let many: Vec<String> = (1..=30).map(|i| format!("line {i}")).collect();
            context.progress.output(many, 30);
            context.progress.output(vec!["x".repeat(2 * bosun_core::event::OUTPUT_LINE_BYTES)], 31);
            tokio::task::yield_now().await;
            ToolOutput::text("ok")
        })
    });
    let mut session = Session::builder(model).tool(build).build().await?;
    let mut events = Vec::new();
    session.run("go", &mut events).await?;
    let outputs: Vec<(&Vec<String>, u64)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolOutput { tail, lines, .. } => Some((tail, *lines)),
            _ => None,
        })
        .collect();
    assert_eq!(outputs.len(), 2, "{events:?}");
    let newest: Vec<String> = (21..=30).map(|i| format!("line {i}")).collect();
    assert_eq!(outputs[0], (&newest, 30), "the newest lines only");
    assert_eq!(outputs[1].0[0].len(), bosun_core::event::OUTPUT_LINE_BYTES, "a long line is cut");
    Ok(())
}

#[tokio::test]
async fn tool_end_carries_the_result_as_the_model_sees_it() -> TestResult {
    let long: String = (0..2_000).map(|i| format!("{i}\n")).collect();
    let model = ScriptedModel::new().tool_call("dump", json!({})).answer("done");
    let text = long.clone();
    let dump = FnTool::new("dump", ToolCategory::Read, move |_, _| {
        let text = text.clone();
        Box::pin(async move { ToolOutput::text(text) })
    });
    let mut session = Session::builder(model.clone()).tool(dump).tool_output_bytes(4096).build().await?;
    let mut events = Vec::new();
    session.run("go", &mut events).await?;
    let shown = events
        .iter()
        .find_map(|e| match e {
            Event::ToolEnd { output, .. } => Some(output.clone()),
            _ => None,
        })
        .ok_or("no tool_end")?;
    let seen = model.requests()[1]
        .messages
        .iter()
        .find_map(|m| match m {
            Message::ToolResult { content, .. } => Some(bosun_core::message::concat_text(content)),
            _ => None,
        })
        .ok_or("no result in the request")?;
    assert!(shown.len() > 2_000 && shown.len() < long.len(), "bounded as the model's: {}", shown.len());
    assert_eq!(shown, seen);
    Ok(())
}

#[tokio::test]
async fn disabled_tools_called_in_history_are_withdrawn() -> TestResult {
    let model = ScriptedModel::new().tool_call("read", json!({})).answer("a").answer("b");
    let mut session = Session::builder(model.clone())
        .tool(FnTool::echo("read"))
        .tool(FnTool::echo("other"))
        .build()
        .await?;
    session.run("one", &mut Vec::new()).await?;
    session.set_active_tools(Vec::<&str>::new())?;
    session.run("two", &mut Vec::new()).await?;
    let request = &model.requests()[2];
    assert!(request.tools.is_empty(), "a disabled tool is withdrawn even though history calls it");
    assert_eq!(request.messages, session.history()[..5].to_vec(), "its calls stay in history");
    Ok(())
}

#[tokio::test]
async fn resumed_history_must_be_well_formed() {
    let id = bosun_core::CallId::new_v7();
    let broken = vec![
        Message::user("hi"),
        Message::Assistant {
            content: vec![ContentPart::ToolCall {
                id,
                name: "read".into(),
                arguments: json!({}),
                provider_data: None,
            }],
            usage: Default::default(),
            stop_reason: bosun_core::StopReason::ToolUse,
        },
    ];
    let err = Session::builder(ScriptedModel::new()).history(broken).build().await.unwrap_err();
    assert!(matches!(err, BuildError::History(_)), "{err}");
}

/// What `on_build` is told: the enabled tools only, and on resume the
/// system prompt the journal holds, not one the builder was given.
#[tokio::test]
async fn on_build_is_told_the_scope_of_a_built_and_a_resumed_session() -> TestResult {
    use std::sync::{Arc, Mutex};

    use bosun_core::{InMemoryJournal, Mode, SessionScope};

    let told: Arc<Mutex<Vec<SessionScope>>> = Arc::default();
    let keep = |told: &Arc<Mutex<Vec<SessionScope>>>| {
        let told = Arc::clone(told);
        move |scope: &SessionScope| told.lock().unwrap().push(scope.clone())
    };
    let journal = InMemoryJournal::new();
    let builder = Session::builder(ScriptedModel::new())
        .tool(FnTool::echo("read"))
        .tool(FnTool::echo("shell"))
        .disable("shell")
        .mode(Mode::Write)
        .system_prompt("be brief")
        .clock(true)
        .journal(journal.clone())
        .on_build(keep(&told));
    builder.authority_snapshot()?;
    assert!(told.lock().unwrap().is_empty(), "only a session that exists is told");
    builder.build().await?;
    Session::builder(ScriptedModel::new())
        .tool(FnTool::echo("read"))
        .tool(FnTool::echo("shell"))
        .disable("shell")
        .clock(true)
        .on_build(keep(&told))
        .resume(journal)
        .await?;
    let told = told.lock().unwrap();
    assert_eq!(told.len(), 2);
    for scope in told.iter() {
        let names: Vec<&str> = scope.tools.iter().map(|t| t.definition().name.as_str()).collect();
        assert_eq!(names, ["read"], "a disabled tool is not the session's to hand on");
        assert_eq!(scope.system.as_deref(), Some("be brief"));
        assert!(scope.clock);
    }
    assert_eq!(told[0].mode, Mode::Write);
    assert_eq!(told[1].mode, Mode::default(), "the resuming builder's mode, not the journal's");
    Ok(())
}
