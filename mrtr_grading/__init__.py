"""The client checker's engine, sans-IO: the grading server's flows, the recording of a run and the rules that grade
it. `mrtr check-client` (HTTP and stdio), the `/check-client` page and the client lesson's in-page runner are
adapters around it; nothing here opens a socket, starts a process or knows a web framework.
"""

from .flows import CHOICES, CHOICES_VARIABLE, ENDLESS_CAP, FLOWS, HARD_TICKET, TYPED_SCHEMA, respond, tool_list
from .honest import HONEST_ROW, HONEST_TOOLS, honest_row
from .recording import MAX_RECORDED, Received, Recording
from .report import ClientReport, RuleRow, grade
from .rules import RULES, Rule
from .verdicts import GradedRun, Verdict

__all__ = [
    "CHOICES", "CHOICES_VARIABLE", "ENDLESS_CAP", "FLOWS", "HARD_TICKET", "HONEST_ROW", "HONEST_TOOLS", "MAX_RECORDED",
    "RULES", "TYPED_SCHEMA", "ClientReport", "GradedRun", "Received", "Recording", "Rule", "RuleRow", "Verdict",
    "grade", "honest_row", "respond", "tool_list",
]
