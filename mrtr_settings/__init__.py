"""MRTR Lab's settings: every `MRTR_*` variable (`environment`), where the key ring comes from
(`keyfiles`), and the LTI platforms a deployment trusts (`lti_platforms`). Reads the environment
and files; never imports a web framework; never lets a secret reach a repr, a log line or a page."""
