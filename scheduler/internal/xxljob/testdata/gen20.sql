-- xxl-job 2.0–2.2 admin schema (generation "2.0–2.2"), written from the
-- tables of xxl-job's doc/db/tables_xxl_job.sql as released in 2.1.2: a
-- job has job_cron (no schedule_type, schedule_conf or misfire_strategy),
-- a group title and order. Only the tables the import reads, plus
-- xxl_job_lock, with the rows the release ships (the sample group, job 1
-- and the admin user) and a few rows of our own for the test.

CREATE TABLE `xxl_job_info` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `job_group` int(11) NOT NULL,
  `job_cron` varchar(128) NOT NULL,
  `job_desc` varchar(255) NOT NULL,
  `add_time` datetime DEFAULT NULL,
  `update_time` datetime DEFAULT NULL,
  `author` varchar(64) DEFAULT NULL,
  `alarm_email` varchar(255) DEFAULT NULL,
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

CREATE TABLE `xxl_job_group` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `app_name` varchar(64) NOT NULL,
  `title` varchar(12) NOT NULL,
  `order` int(11) NOT NULL DEFAULT '0',
  `address_type` tinyint(4) NOT NULL DEFAULT '0',
  `address_list` varchar(512) DEFAULT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE `xxl_job_user` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `username` varchar(50) NOT NULL,
  `password` varchar(50) NOT NULL,
  `role` tinyint(4) NOT NULL,
  `permission` varchar(255) DEFAULT NULL,
  PRIMARY KEY (`id`),
  UNIQUE KEY `i_username` (`username`) USING BTREE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE `xxl_job_lock` (
  `lock_name` varchar(50) NOT NULL,
  PRIMARY KEY (`lock_name`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- The release's rows.
INSERT INTO `xxl_job_group` (`id`, `app_name`, `title`, `order`, `address_type`, `address_list`) VALUES (1, 'xxl-job-executor-sample', '示例执行器', 1, 0, NULL);
INSERT INTO `xxl_job_info` (`id`, `job_group`, `job_cron`, `job_desc`, `add_time`, `update_time`, `author`, `alarm_email`, `executor_route_strategy`, `executor_handler`, `executor_param`, `executor_block_strategy`, `executor_timeout`, `executor_fail_retry_count`, `glue_type`, `glue_source`, `glue_remark`, `glue_updatetime`, `child_jobid`) VALUES (1, 1, '0 0 0 * * ? *', '测试任务1', '2018-11-03 22:21:31', '2018-11-03 22:21:31', 'XXL', '', 'FIRST', 'demoJobHandler', '', 'SERIAL_EXECUTION', 0, 0, 'BEAN', '', 'GLUE代码初始化', '2018-11-03 22:21:31', '');
INSERT INTO `xxl_job_user` (`id`, `username`, `password`, `role`, `permission`) VALUES (1, 'admin', 'e10adc3949ba59abbe56e057f20f883e', 1, NULL);
INSERT INTO `xxl_job_lock` (`lock_name`) VALUES ('schedule_lock');

-- Ours: a running job whose next fire the admin computed in Asia/Shanghai
-- (02:00 there is 18:00 UTC the day before), a Python glue, and a user of
-- group 1.
INSERT INTO `xxl_job_info` (`id`, `job_group`, `job_cron`, `job_desc`, `author`, `executor_route_strategy`, `executor_handler`, `executor_param`, `executor_block_strategy`, `glue_type`, `glue_source`, `child_jobid`, `trigger_status`, `trigger_next_time`) VALUES
  (2, 1, '0 0 2 * * ?', 'Nightly cleanup', 'alice', 'ROUND', 'cleanupHandler', 'days=7', 'DISCARD_LATER', 'BEAN', '', '1', 1, 1893520800000),
  (3, 1, '', 'Python on demand', 'bob', 'FIRST', '', 'x', 'SERIAL_EXECUTION', 'GLUE_PYTHON', 'import sys\nprint(sys.argv[1:])\n', '', 0, 0);
INSERT INTO `xxl_job_user` (`id`, `username`, `password`, `role`, `permission`) VALUES (2, 'ops', 'e10adc3949ba59abbe56e057f20f883e', 0, '1');
