"""The host's view of the profiles (neuromotor.boards.ondevice.PROFILES, read from the board's
nm_td3_plan.py, used for run directories) is what MicroPython reads (nm_td3.PROFILES), every
profile's memory plan fits its budget, and the trainer refuses a profile larger than the free
heap before allocating anything."""

import json

from neuromotor.boards.ondevice import PROFILES

from .conftest import run_mp


def test_profiles_match_and_fit(micropython_train):
    out = run_mp(micropython_train, "import nm_td3, json\n"
                 "print(json.dumps({k: [v, nm_td3.plan(k)['bytes']] for k, v in nm_td3.PROFILES.items()}))")
    board = json.loads(out.strip().splitlines()[-1])
    assert set(board) == set(PROFILES) == {"teensy41", "small", "esp32"}
    for name, (profile, plan_bytes) in board.items():
        assert profile == json.loads(json.dumps(PROFILES[name])), name
        assert plan_bytes <= profile["budget"], f"{name}: plan {plan_bytes} B exceeds its budget {profile['budget']} B"
    assert board["teensy41"][0]["hidden"] == [64, 64] and board["esp32"][0]["half_replay"] is True


def test_too_large_refused_with_numbers(micropython_train):
    out = run_mp(micropython_train, "import nm_td3, gc\n"
                 "try:\n"
                 "    nm_td3.Trainer('teensy41')\n"
                 "    print('TRAINED')\n"
                 "except nm_td3.ProfileTooLarge as e:\n"
                 "    print('REFUSED', gc.mem_alloc() < 200000, e)\n", heap="400K")
    assert "REFUSED True profile teensy41 needs about" in out, out
    assert "bytes free" in out
