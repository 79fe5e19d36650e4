#define MAX_ACTIONS $max_actions
#define MAX_ID $max_id
#define LOG_SIZE $log_size
#define LIFECYCLE_SIZE $lifecycle_size
#define MOST_PER_CALL $most_per_call
