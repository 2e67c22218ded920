export { withVm, type WithVmOptions } from "./with-vm.js"
export {
  startTestVm,
  type RunningTestVm,
  type TestVm,
  type TestVmExecOptions,
  type TestVmExecResult,
  type TestVmOptions
} from "./test-vm.js"
