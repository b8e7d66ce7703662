"""The OpenAPI model of the observation describes what :mod:`agentrl_envs.wire` builds."""

from __future__ import annotations

from agentrl_controller.http.models import Observation as ObservationModel
from agentrl_envs.wire import Observation


def test_the_documented_observation_has_the_fields_the_controller_sends() -> None:
    payload = Observation(messages=[{"role": "user", "content": "x"}], result=None).client_payload(5)
    assert list(ObservationModel.model_fields) == list(payload)
    assert ObservationModel.model_validate(payload).model_dump() == payload
