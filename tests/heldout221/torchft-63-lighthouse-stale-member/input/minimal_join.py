from torchft import Manager, ProcessGroupGloo
from datetime import timedelta

pg = ProcessGroupGloo()
manager = Manager(
	pg=pg,
	min_replica_size=2,
	load_state_dict=lambda x: None,
	state_dict=lambda: {},
	replica_id=f"test",
	timeout=timedelta(seconds=30),
	use_async_quorum=False,
)

while True:
	manager.start_quorum("start", allow_heal=False)
	manager.should_commit()
	if manager.current_step() > 20:
		break
