"""kdispatch.torch's per-call work without a GPU or torch: a stand-in torch module and a stand-in
kd_row. What the routing cache must do: build a shape's descriptor once, ask kd_row on every call
that can be a hit, and answer a shape whose reply was no_entry or vendor_chosen with the original
kernel for the next _RECHECK_CALLS calls of that device, counted under the same reason, then ask
again."""
import importlib
import sys
import types
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import kdispatch  # noqa: E402

NO_ENTRY, CAPTURING, VENDOR_CHOSEN = 0, 2, 16
REASONS = {NO_ENTRY: "no_entry", CAPTURING: "capturing", VENDOR_CHOSEN: "vendor_chosen"}


class FakeTensor:
    def __init__(self, device=0):
        self.device_index = device

    def get_device(self):
        return self.device_index

    def data_ptr(self):
        return 0x1000


def fake_torch():
    t = types.ModuleType("torch")
    t.float16, t.bfloat16, t.float32 = "float16", "bfloat16", "float32"
    t.contiguous_format = "contiguous"
    t._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda device: 0x70 + device)
    t.empty_like = lambda x, memory_format=None: FakeTensor(x.get_device())
    t.library = types.SimpleNamespace()
    t.cuda = types.SimpleNamespace()
    return t


class RoutingCache(unittest.TestCase):
    def setUp(self):
        with mock.patch.dict(sys.modules, {"torch": fake_torch()}):
            sys.modules.pop("kdispatch.torch", None)
            self.kt = importlib.import_module("kdispatch.torch")
        sys.modules.pop("kdispatch.torch", None)
        self.addCleanup(lambda: kdispatch.__dict__.pop("torch", None))  # the stand-in stays out of later imports
        self.replies = []
        self.asked = []
        patches = [
            mock.patch.object(kdispatch, "row", side_effect=self.fake_row),
            mock.patch.object(kdispatch, "row_desc", side_effect=lambda *shape: ("desc",) + shape),
            mock.patch.object(kdispatch, "reason_name", side_effect=lambda r: REASONS[r]),
        ]
        for p in patches:
            p.start()
            self.addCleanup(p.stop)
        self.row_desc = kdispatch.row_desc

    def fake_row(self, desc, x, weight, bias, y, eps, stream):
        self.asked.append((desc, stream))
        return self.replies[0] if self.replies else (kdispatch.KD_SUCCESS, -1)

    def run_softmax(self, device=0, rows=65536):
        return self.kt._run("softmax", "f32", FakeTensor(device), None, None, rows, 128, 0.0)

    def test_a_hit_asks_every_call_and_builds_the_descriptor_once(self):
        for _ in range(3):
            self.assertIsNotNone(self.run_softmax())
        self.assertEqual(len(self.asked), 3)
        self.assertEqual(self.row_desc.call_count, 1)
        self.assertEqual(self.asked[0][1], 0x70, "the raw stream of the tensor's device")
        self.assertEqual(self.kt.stats()["hit"], 3)

    def test_vendor_chosen_is_reused_for_the_next_calls_then_asked_again(self):
        self.replies = [(kdispatch.KD_FALLBACK, VENDOR_CHOSEN)]
        recheck = self.kt._RECHECK_CALLS
        for _ in range(recheck + 1):
            self.assertIsNone(self.run_softmax())
        self.assertEqual(len(self.asked), 1, "the calls after the answer go to the original kernel")
        self.assertEqual(self.kt.stats()["fallback:vendor_chosen"], recheck + 1)
        self.replies = []  # a record published meanwhile
        self.assertIsNotNone(self.run_softmax())
        self.assertEqual(len(self.asked), 2)
        self.assertIsNotNone(self.run_softmax())
        self.assertEqual(len(self.asked), 3, "a hit is asked again on every call")

    def test_an_answer_holds_for_its_device_and_shape_only(self):
        self.replies = [(kdispatch.KD_FALLBACK, NO_ENTRY)]
        self.run_softmax(device=0)
        self.run_softmax(device=0)
        self.assertEqual(len(self.asked), 1)
        self.run_softmax(device=1)
        self.run_softmax(device=0, rows=4096)
        self.assertEqual(len(self.asked), 3)
        self.assertEqual(self.row_desc.call_count, 2, "one descriptor per shape, whatever the device")

    def test_a_passing_reason_is_not_reused(self):
        self.replies = [(kdispatch.KD_FALLBACK, CAPTURING)]
        for _ in range(3):
            self.assertIsNone(self.run_softmax())
        self.assertEqual(len(self.asked), 3)
        self.assertEqual(self.kt.stats()["fallback:capturing"], 3)

    def test_an_empty_tensor_is_uncovered(self):
        self.assertIsNone(self.kt._run("softmax", "f32", FakeTensor(), None, None, 0, 128, 0.0))
        self.assertEqual(self.asked, [])
        self.assertEqual(self.kt.stats()["uncovered:empty"], 1)


if __name__ == "__main__":
    unittest.main()
