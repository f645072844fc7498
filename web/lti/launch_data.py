"""pylti1p3's launch data storage, kept in the app's LTI store (`mrtr_stores.lti.LtiStore`): the adapter between
the two, and nothing else. Keys are prefixed with the browser's LTI session id (the `lti1p3-session-id` cookie
pylti1p3 sets at login), so one browser cannot read another's state."""

from __future__ import annotations

from pylti1p3.launch_data_storage.base import LaunchDataStorage

from mrtr import JSON
from mrtr_stores.lti import LtiStore


class StoreLaunchData(LaunchDataStorage[JSON]):
    """pylti1p3's launch data storage on an `LtiStore`: what pylti1p3 keeps (states, nonces, launches) is JSON."""

    def __init__(self, store: LtiStore) -> None:
        super().__init__()
        self._lti_store = store

    def can_set_keys_expiration(self) -> bool:
        return True

    def get_value(self, key: str) -> JSON:
        value: JSON = self._lti_store.kv_get(self._prepare_key(key))
        return value

    def set_value(self, key: str, value: JSON, exp: int | None = None) -> None:
        self._lti_store.kv_set(self._prepare_key(key), value, exp)

    def check_value(self, key: str) -> bool:
        # pylti1p3 calls this for the nonce only: spending it here is what makes a replayed id_token fail.
        return self._lti_store.kv_take(self._prepare_key(key))
