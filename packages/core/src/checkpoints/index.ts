export {
  Checkpoints,
  CheckpointsLive,
  MAX_FORKS_PER_CALL,
  type Dependents,
  type ForkedVms,
  type TakenCheckpoint
} from "./service.js"
export { CHECKPOINT_NAME, CheckpointName, validateCheckpointName } from "./layout.js"
