/** True while `pid` names a live process of this host (EPERM: it exists but belongs to someone else). */
export const isProcessAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as { code?: string }).code === "EPERM"
  }
}
