"""The host's copy of the profiles (neuromotor.boards.ondevice.PROFILES, used for run directories)
matches the board's (nm_td3.PROFILES), every profile's memory plan fits its budget, and
the trainer refuses a profile larger than the free heap before allocating anything."""

import json

from neuromotor.boards.ondevice import PROFILES

from .conftest import run_mp


def test_profiles_match_and_fit(micropython_train):
    out = run_mp(micropython_train, "import nm_td3, json\n"
                 "print(json.dumps({k: [list(v['hidden']), v['replay'], v['batch'], v['budget'], "
                 "nm_td3.plan(k)['bytes']] for k, v in nm_td3.PROFILES.items()}))")
    board = json.loads(out.strip().splitlines()[-1])
    assert set(board) == set(PROFILES) == {"teensy41", "small", "esp32"}
    for name, (hidden, replay, batch, budget, plan_bytes) in board.items():
        p = PROFILES[name]
        assert (tuple(hidden), replay, batch, budget) == (tuple(p["hidden"]), p["replay"], p["batch"], p["budget"])
        assert plan_bytes <= budget, f"{name}: plan {plan_bytes} B exceeds its budget {budget} B"
    assert board["teensy41"][0] == [64, 64] and board["teensy41"][1:3] == [10000, 100]


def test_too_large_refused_with_numbers(micropython_train):
    out = run_mp(micropython_train, "import nm_td3, gc\n"
                 "try:\n"
                 "    nm_td3.Trainer('teensy41')\n"
                 "    print('TRAINED')\n"
                 "except nm_td3.ProfileTooLarge as e:\n"
                 "    print('REFUSED', gc.mem_alloc() < 200000, e)\n", heap="400K")
    assert "REFUSED True profile teensy41 needs about" in out, out
    assert "bytes free" in out
