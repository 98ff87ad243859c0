-- xxl_job_log and xxl_job_log_report rows for the history import test,
-- loaded after gen34.sql and jobs.sql. Times are relative to the server's
-- clock (read back in Asia/Shanghai, they lie in the past whatever the
-- server's zone west of it). Job 2 is a sharding broadcast; job 23
-- (GLUE(Java)) is not imported, so its log is not either. The report's
-- day 20 days ago is older than the log rows: only its totals can come.
INSERT INTO `xxl_job_log` (`id`, `job_group`, `job_id`, `executor_address`, `executor_handler`, `executor_param`, `executor_sharding_param`, `executor_fail_retry_count`, `trigger_time`, `trigger_code`, `trigger_msg`, `handle_time`, `handle_code`, `handle_msg`, `alarm_status`) VALUES
  (101, 1, 1, 'http://10.0.0.7:9999/', 'demoJobHandler', '', NULL, 0, NOW() - INTERVAL 2 DAY, 200, '任务触发类型：Cron触发<br>调度机器：10.0.0.2<br>执行器-地址列表：[http://10.0.0.7:9999/]<br><br><span style="color:#00c0ef;" > >>>>>>>>>>>触发调度<<<<<<<<<<< </span><br>触发调度：<br>address：http://10.0.0.7:9999/<br>code：200<br>msg：null', NOW() - INTERVAL 2 DAY + INTERVAL 4 SECOND, 200, 'done: 12 rows', 0),
  (102, 1, 1, 'http://10.0.0.7:9999/', 'demoJobHandler', 'x=1', NULL, 0, NOW() - INTERVAL 2 DAY + INTERVAL 1 MINUTE, 200, 'ok', NOW() - INTERVAL 2 DAY + INTERVAL 1 MINUTE + INTERVAL 2 SECOND, 500, 'java.lang.NullPointerException<br>at com.example.Demo.run(Demo.java:42)', 2),
  (103, 1, 2, 'http://10.0.0.7:9999/', 'shardingJobHandler', '', '0/2', 0, NOW() - INTERVAL 1 DAY, 200, 'ok', NOW() - INTERVAL 1 DAY + INTERVAL 9 SECOND, 200, NULL, 0),
  (104, 1, 2, 'http://10.0.0.8:9999/', 'shardingJobHandler', '', '1/2', 0, NOW() - INTERVAL 1 DAY, 200, 'ok', NOW() - INTERVAL 1 DAY + INTERVAL 3 MINUTE, 502, 'job execute timeout', 0),
  (105, 1, 3, NULL, 'cleanupHandler', 'days=7', NULL, 3, NOW() - INTERVAL 3 DAY, 500, '<span style="color:#00c0ef;" >调度失败</span><br>msg：address is empty', NULL, 0, NULL, 3),
  (106, 1, 3, 'http://10.0.0.7:9999/', 'cleanupHandler', 'days=7', NULL, 0, NOW() - INTERVAL 1 HOUR, 200, 'ok', NULL, 0, NULL, 0),
  (107, 1, 3, NULL, 'cleanupHandler', 'days=7', NULL, 0, NOW() - INTERVAL 5 DAY, 0, NULL, NULL, 0, NULL, 0),
  (108, 1, 23, 'http://10.0.0.7:9999/', '', '', NULL, 0, NOW() - INTERVAL 1 DAY, 200, 'ok', NOW() - INTERVAL 1 DAY, 200, NULL, 0),
  (109, 1, 1, 'http://10.0.0.7:9999/', 'demoJobHandler', '', NULL, 0, NOW() - INTERVAL 40 DAY, 200, 'ok', NOW() - INTERVAL 40 DAY, 200, NULL, 0);
INSERT INTO `xxl_job_log_report` (`trigger_day`, `running_count`, `suc_count`, `fail_count`, `update_time`) VALUES
  (CURDATE() - INTERVAL 40 DAY, 0, 1, 0, NOW()),
  (CURDATE() - INTERVAL 20 DAY, 0, 5, 1, NOW()),
  (CURDATE() - INTERVAL 2 DAY, 0, 1, 1, NOW()),
  (CURDATE() - INTERVAL 1 DAY, 0, 2, 1, NOW());
