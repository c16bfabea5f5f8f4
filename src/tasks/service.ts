// Placeholder replaced by the task service.
export interface TaskService {}
