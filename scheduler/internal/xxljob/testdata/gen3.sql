-- xxl-job 3.x admin schema (generation "3.x"), written from the columns
-- xxl-job 3.x's admin reads and writes (its MyBatis mappers of
-- xxl_job_group, xxl_job_info and xxl_job_user): the job's display name
-- is name (job_desc is gone), a job may carry its own schedule_timezone,
-- the group has an access_token, the user a login token, and the log id
-- is a BIGINT. Only the tables the import reads, plus xxl_job_lock, with a
-- sample group, job and admin user like the release's, and rows of our own
-- for what the import must get right.

CREATE TABLE `xxl_job_group` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `app_name` varchar(64) NOT NULL,
  `title` varchar(64) NOT NULL,
  `address_type` tinyint(4) NOT NULL DEFAULT '0',
  `address_list` text,
  `access_token` varchar(255) DEFAULT NULL,
  `update_time` datetime DEFAULT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE `xxl_job_info` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `job_group` int(11) NOT NULL,
  `name` varchar(255) NOT NULL,
  `add_time` datetime DEFAULT NULL,
  `update_time` datetime DEFAULT NULL,
  `author` varchar(64) DEFAULT NULL,
  `alarm_email` varchar(255) DEFAULT NULL,
  `schedule_type` varchar(50) NOT NULL DEFAULT 'NONE',
  `schedule_conf` varchar(128) DEFAULT NULL,
  `schedule_timezone` varchar(64) DEFAULT NULL,
  `misfire_strategy` varchar(50) NOT NULL DEFAULT 'DO_NOTHING',
  `executor_route_strategy` varchar(50) DEFAULT NULL,
  `executor_handler` varchar(255) DEFAULT NULL,
  `executor_param` varchar(512) DEFAULT NULL,
  `executor_block_strategy` varchar(50) DEFAULT NULL,
  `executor_timeout` int(11) NOT NULL DEFAULT '0',
  `executor_fail_retry_count` int(11) NOT NULL DEFAULT '0',
  `glue_type` varchar(50) NOT NULL,
  `glue_source` mediumtext,
  `glue_remark` varchar(128) DEFAULT NULL,
  `glue_updatetime` datetime DEFAULT NULL,
  `child_jobid` varchar(255) DEFAULT NULL,
  `trigger_status` tinyint(4) NOT NULL DEFAULT '0',
  `trigger_last_time` bigint(13) NOT NULL DEFAULT '0',
  `trigger_next_time` bigint(13) NOT NULL DEFAULT '0',
  PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE `xxl_job_log` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `job_group` int(11) NOT NULL,
  `job_id` int(11) NOT NULL,
  `trigger_time` datetime DEFAULT NULL,
  `trigger_code` int(11) NOT NULL,
  `handle_time` datetime DEFAULT NULL,
  `handle_code` int(11) NOT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE `xxl_job_user` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `username` varchar(50) NOT NULL,
  `password` varchar(100) NOT NULL,
  `token` varchar(100) DEFAULT NULL,
  `role` tinyint(4) NOT NULL,
  `permission` varchar(255) DEFAULT NULL,
  PRIMARY KEY (`id`),
  UNIQUE KEY `i_username` (`username`) USING BTREE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE `xxl_job_lock` (
  `lock_name` varchar(50) NOT NULL,
  PRIMARY KEY (`lock_name`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- Sample rows like the release's.
INSERT INTO `xxl_job_group` (`id`, `app_name`, `title`, `address_type`, `address_list`, `access_token`, `update_time`) VALUES
  (1, 'xxl-job-executor-sample', '通用执行器Sample', 0, NULL, 'default_token', '2025-01-01 00:00:00'),
  (2, 'ops-scripts', '运维脚本', 1, 'http://10.0.0.5:9999/', NULL, '2025-01-01 00:00:00');
INSERT INTO `xxl_job_info` (`id`, `job_group`, `name`, `add_time`, `update_time`, `author`, `alarm_email`, `schedule_type`, `schedule_conf`, `misfire_strategy`, `executor_route_strategy`, `executor_handler`, `executor_param`, `executor_block_strategy`, `executor_timeout`, `executor_fail_retry_count`, `glue_type`, `glue_source`, `glue_remark`, `glue_updatetime`, `child_jobid`) VALUES
  (1, 1, '示例任务01', '2025-01-01 00:00:00', '2025-01-01 00:00:00', 'XXL', '', 'CRON', '0 0 0 * * ? *', 'DO_NOTHING', 'FIRST', 'demoJobHandler', '', 'SERIAL_EXECUTION', 0, 0, 'BEAN', '', 'GLUE代码初始化', '2025-01-01 00:00:00', '');
INSERT INTO `xxl_job_user` (`id`, `username`, `password`, `token`, `role`, `permission`) VALUES
  (1, 'admin', '8d969eef6ecad3c29a3a629280e686cf0c3f5d5a86aff3ca12020c923adc6c92', NULL, 1, NULL);
INSERT INTO `xxl_job_lock` (`lock_name`) VALUES ('schedule_lock');

-- Ours. Job 2's next fire was computed in Asia/Shanghai (02:00 there, 18:00
-- UTC the day before); job 8 has its own zone. 5, 6 and 7 cannot be
-- imported (over 366 days; both day fields *, which Quartz refuses; past
-- years only), and must not stop the others.
INSERT INTO `xxl_job_info` (`id`, `job_group`, `name`, `author`, `schedule_type`, `schedule_conf`, `schedule_timezone`, `misfire_strategy`, `executor_route_strategy`, `executor_handler`, `executor_param`, `executor_block_strategy`, `glue_type`, `glue_source`, `child_jobid`, `trigger_status`, `trigger_next_time`) VALUES
  (2, 2, 'Python3 report', 'alice', 'CRON', '0 0 2 * * ?', NULL, 'DO_NOTHING', 'FIRST', '', 'weekly', 'SERIAL_EXECUTION', 'GLUE_PYTHON', 'import sys\nprint(sys.version_info[0], sys.argv[1:])\n', '', 1, 1893520800000),
  (3, 2, 'Python2 legacy', 'alice', 'NONE', NULL, NULL, 'DO_NOTHING', 'FIRST', '', '', 'SERIAL_EXECUTION', 'GLUE_PYTHON2', 'print "legacy"\n', '', 0, 0),
  (4, 2, 'pwsh inventory', 'alice', 'NONE', NULL, NULL, 'DO_NOTHING', 'FIRST', '', '', 'SERIAL_EXECUTION', 'GLUE_PWSH', 'Write-Host $args[0]\n', '', 0, 0),
  (5, 1, 'Every two years', 'bob', 'FIX_RATE', '63072000', NULL, 'DO_NOTHING', 'FIRST', 'rareHandler', '', 'SERIAL_EXECUTION', 'BEAN', '', '', 0, 0),
  (6, 1, 'Both day fields star', 'bob', 'CRON', '0 0 0 * * *', NULL, 'DO_NOTHING', 'FIRST', 'dailyHandler', '', 'SERIAL_EXECUTION', 'BEAN', '', '', 0, 0),
  (7, 1, 'Party like 1999', 'bob', 'CRON', '0 0 0 1 1 ? 1999', NULL, 'DO_NOTHING', 'FIRST', 'partyHandler', '', 'SERIAL_EXECUTION', 'BEAN', '', '', 0, 0),
  (8, 1, 'New York open', 'carol', 'CRON', '0 30 9 ? * MON-FRI', 'America/New_York', 'FIRE_ONCE_NOW', 'ROUND', '  marketOpenHandler ', 'NYSE', 'SERIAL_EXECUTION', 'BEAN', '', '1,5', 0, 0);
INSERT INTO `xxl_job_user` (`id`, `username`, `password`, `token`, `role`, `permission`) VALUES
  (2, 'ops', '8d969eef6ecad3c29a3a629280e686cf0c3f5d5a86aff3ca12020c923adc6c92', NULL, 0, '1,2');
