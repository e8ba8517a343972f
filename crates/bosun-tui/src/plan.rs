//! The model's plan in the conversation: each update the model makes goes
//! to the scrollback as the whole list, its steps ticked off, the one in
//! progress in bold (as Codex and Claude Code show theirs).

use bosun_core::plan::{Plan, StepStatus};
use ratatui::text::{Line, Span};

use crate::app::App;
use crate::text::clean_line;

impl App {
    pub(crate) fn plan_updated(&mut self, plan: &Plan) {
        self.finish_output();
        let (done, all) = plan.progress();
        let mut shown = vec![Line::from(vec![
            Span::styled("• ", self.theme.cyan()),
            Span::styled("Plan", self.theme.bold()),
            Span::styled(format!(" ({done}/{all} done)"), self.theme.dim()),
        ])];
        if let Some(why) = plan.explanation.as_deref().filter(|w| !w.trim().is_empty()) {
            shown.push(Line::from(Span::styled(format!("  {}", clean_line(why)), self.theme.dim())));
        }
        for step in &plan.steps {
            let text = clean_line(&step.step);
            let line = match step.status {
                StepStatus::Completed => Line::from(vec![
                    Span::styled("  ✔ ", self.theme.green()),
                    Span::styled(text, self.theme.dim().patch(self.theme.crossed_out())),
                ]),
                StepStatus::InProgress => Line::from(vec![
                    Span::styled("  ▶ ", self.theme.cyan()),
                    Span::styled(text, self.theme.bold()),
                ]),
                StepStatus::Pending => Line::from(vec![Span::raw("  □ "), Span::raw(text)]),
            };
            shown.push(line);
        }
        self.push_lines(shown);
    }
}
